"""The GPT-2 124M ladder: each step keeps the previous ones and adds one optimization; branches
(fp16, foreach AdamW, the memory savers) start from the step they vary.

Speedups are tokens per second over the reference case of the same run; they are declared for CUDA
only, where the full size runs. Memory cases are gated on peak memory and declared slower.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads import float8
from workloads.gpt2 import GPT2

ON_CUDA = "CUDA-only kernels"
# Eager cases whose time rides on the host CPU (kernel launches, the for-loop optimizer) move between runs
# of the same code (research/evidence/h100-trust.md): their speedup minimums sit about 10% below the lowest speedup
# A/A runs saw, and a shortfall within the noise their baselines measure passes
# (trainperf.judge.reference_checks). The time gate takes each case's run-to-run noise from its baseline.

reference = Optimization(REFERENCE, sync_every_step=True)  # fp32, naive attention, for-loop AdamW, loss read each step
tf32 = reference.but("tf32", tf32=True, min_speedup={"cuda": 1.8})
amp_bf16 = tf32.but("amp_bf16", amp_dtype="bfloat16", min_speedup={"cuda": 2.0})
amp_fp16_gradscaler = tf32.but(
    "amp_fp16_gradscaler",
    amp_dtype="float16",
    grad_scaler=True,
    needs_cuda="float16 autocast with GradScaler is the CUDA recipe",
    min_speedup={"cuda": 1.7},
)
# A custom kernel: cross-entropy as two Triton kernels over the bf16 logits (one pass forward, one
# backward), instead of eager autocast's float32 copy, log-softmax and float32 gradient
# (custom_kernels/fused_cross_entropy.py). A branch of amp_bf16, whose step is bound by the GPU: the bytes it
# saves show there as time and as peak memory (research/evidence/h100-transformer-ladder.md).
fused_cross_entropy = amp_bf16.but(
    "fused_cross_entropy",
    options={"cross_entropy": "triton"},
    needs_cuda="the Triton kernel is compiled for the GPU (its interpreter checks it in tests/)",
    min_speedup={"cuda": 2.0},
)
sdpa_flash = amp_bf16.but(
    "sdpa_flash",
    options={"attention": "flash"},
    needs_cuda="the flash attention kernel exists on CUDA only",
    min_speedup={"cuda": 2.8},
)
fused_adamw = amp_bf16.but(
    "fused_adamw",
    options={"attention": "sdpa", "optimizer": "fused"},
    min_speedup={"cuda": 3.3},
)
foreach_adamw = amp_bf16.but(
    "foreach_adamw",
    options={"attention": "sdpa", "optimizer": "foreach"},
    min_speedup={"cuda": 3.1},
)
vocab_pad_64 = fused_adamw.but(
    "vocab_pad_64",
    options={**fused_adamw.options, "vocab_multiple": 64},
    min_speedup={"cuda": 3.8},
)
no_host_sync = vocab_pad_64.but("no_host_sync", sync_every_step=False, min_speedup={"cuda": 4.0})
batch_x2 = no_host_sync.but("batch_x2", options={**no_host_sync.options, "batch_scale": 2}, min_speedup={"cuda": 5.0})
compiled = batch_x2.but("compile", compile=True, min_speedup={"cuda": 8.5})
cuda_graphs = compiled.but(
    "cuda_graphs",
    compile_mode="reduce-overhead",
    needs_cuda="CUDA graphs are recorded on CUDA only",
    min_speedup={"cuda": 10.0},
)
# Memory savers: the reference's knobs plus one saver; allowed to be slower, gated on peak memory.
activation_checkpointing = reference.but(
    "activation_checkpointing",
    options={"checkpointing": True},
    max_memory_ratio={"cuda": 0.6},
    min_speedup={"cuda": 0.5},
)
grad_accumulation = reference.but(
    "grad_accumulation",
    accumulation_steps=4,
    max_memory_ratio={"cuda": 0.6},
    min_speedup={"cuda": 0.5},
)
# The best combination measured (research/experiments/stack_sweep.py, research/evidence/h100-transformer-ladder.md):
# batch 128, CUDA graphs on top of compile, a bfloat16 residual stream (half the bytes for the norms and
# adds that compile cannot remove), pinned batches copied without a host sync (the host queues the next
# iterations while the GPU works), the weights and AdamW moments in bfloat16 (no float32 casts of
# weights and gradients, half the optimizer's bytes; over these steps its validation loss stays with the
# float32 weights', a long run would keep float32 master weights), the output layer
# and the loss as one function whose Triton kernel writes the logits' gradient in the forward pass
# (custom_kernels/fused_cross_entropy.py), the MLP with GELU and GELU's gradient in its GEMMs' cuBLASLt
# epilogues (custom_kernels/epilogue_mlp.py), and every GEMM running the fastest of the algorithms PyTorch and
# cuBLASLt offer for its shape, timed at its first call (custom_kernels/tuned_gemm.py).
stack = compiled.but(
    "stack",
    compile_mode="reduce-overhead",
    pin_memory=True,
    non_blocking=True,
    options={
        **compiled.options,
        "batch_scale": 16,
        "residual_dtype": "bfloat16",
        "cross_entropy": "triton_linear",
        "param_dtype": "bfloat16",
        "mlp": "cublaslt_epilogues",
        "linear": "tuned",
    },
    needs_cuda="the stack replays CUDA graphs and runs Triton kernels compiled for the GPU and cuBLASLt",
    min_speedup={"cuda": 12.0},
)
# FP8 training (workloads/float8.py): the linear layers' GEMMs on FP8 tensor cores, scaled per tensor or per
# row, on top of compile, which fuses the scaling casts; in the stack, FP8 takes the place of its tuned
# bf16 GEMMs and cuBLASLt MLP. MFU stays against the dense bf16 peak, as for every case. At GPT-2 small's
# sizes FP8 runs slower than the bf16 cases it builds on (research/evidence/h200-fp8.md); its minimum speedups
# over the reference sit about 20% below the lowest measured on H200 leases (6.4x, 6.1x and 11.9x).
FP8 = {"needs_cuda": "FP8 tensor cores need compute capability 8.9 or later", "needs_package": float8.REQUIREMENT}
fp8_tensorwise = compiled.but(
    "fp8_tensorwise", options={**compiled.options, "float8": "tensorwise"}, min_speedup={"cuda": 5.0}, **FP8
)
fp8_rowwise = compiled.but(
    "fp8_rowwise", options={**compiled.options, "float8": "rowwise"}, min_speedup={"cuda": 5.0}, **FP8
)
stack_fp8 = stack.but(
    "stack_fp8",
    options={**stack.options, "mlp": "torch", "linear": "torch", "float8": "tensorwise"},
    min_speedup={"cuda": 10.0},
    **FP8,
)

LADDER = Ladder(
    GPT2(),
    [
        reference,
        tf32,
        amp_bf16,
        fused_cross_entropy,
        amp_fp16_gradscaler,
        sdpa_flash,
        fused_adamw,
        foreach_adamw,
        vocab_pad_64,
        no_host_sync,
        batch_x2,
        compiled,
        cuda_graphs,
        activation_checkpointing,
        grad_accumulation,
        stack,
        fp8_tensorwise,
        fp8_rowwise,
        stack_fp8,
    ],
)
