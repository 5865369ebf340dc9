"""The BERT-style encoder ladder (masked-language modelling), cumulative like GPT-2's."""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.bert import Bert

# The eager and compiled cases after amp_bf16 spread within one run (their time rides on the host CPU, as
# GPT-2's do: docs/evidence/trust.md): their time gate catches gross slowdowns only.
HOST_BOUND = 0.25

reference = Optimization(REFERENCE, sync_every_step=True)  # fp32, naive attention, for-loop AdamW
amp_bf16 = reference.but("amp_bf16", amp_dtype="bfloat16", min_speedup={"cuda": 1.5})
sdpa_flash = amp_bf16.but(
    "sdpa_flash",
    options={"attention": "flash"},
    needs_cuda="the flash attention kernel exists on CUDA only",
    min_speedup={"cuda": 2.0},
    max_slowdown=HOST_BOUND,
)
fused_adamw = amp_bf16.but(
    "fused_adamw", options={"attention": "sdpa", "optimizer": "fused"}, min_speedup={"cuda": 2.0}
)
compiled = fused_adamw.but("compile", compile=True, min_speedup={"cuda": 2.5}, max_slowdown=HOST_BOUND)
stack = compiled.but(
    "stack",
    tf32=True,
    sync_every_step=False,
    options={**compiled.options, "vocab_multiple": 64},
    min_speedup={"cuda": 3.0},
    max_slowdown=HOST_BOUND,
)

LADDER = Ladder(
    Bert(),
    [reference, amp_bf16, sdpa_flash, fused_adamw, compiled, stack],
)
