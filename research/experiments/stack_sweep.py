"""Measure candidate GPT-2 'stack' combinations on this GPU, one line each, to choose the suite's stack.

    python research/experiments/stack_sweep.py [--iters 20] [--warmup 5] [--only NAME...] [--traces DIR]

Each candidate is the suite's earlier ``stack`` case (batch 32, compile, CUDA graphs, bfloat16 residual)
with another batch size, cross-entropy, attention backend, weight dtype, GELU implementation, BLAS
library or Inductor setting (coordinate descent tunes each generated kernel's launch configuration by
timing it; max-autotune times Triton's GEMM templates, with their fused epilogues, against cuBLAS); a
candidate that fails prints its error and the sweep goes on. With ``--traces`` one more iteration of
each candidate runs under torch.profiler: its trace is written to DIR/NAME/trace.json and its kernel
time is printed by kind, with the top kernels.
"""

from __future__ import annotations

import argparse
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch._inductor.config
from trainperf.child.marked_iteration import marked_iteration
from trainperf.judge import stats
from trainperf.measure.device import peak_tflops
from trainperf.measure.marks import TRACE
from trainperf.measure.runner import Prepared, run_case
from trainperf.measure.torch_trace import read_torch_trace
from trainperf.profile.launches import iteration_launches, kernel_table
from trainperf.spec.case import CaseSpec
from trainperf.spec.workload import FULL

from custom_kernels.gemm_tuning import timings
from workloads.gpt2 import GPT2
from workloads.ladders.gpt2 import stack

TUNED = {"coordinate_descent_tuning": True}
GEMM_TEMPLATES = {"max_autotune_gemm_backends": "ATEN,TRITON", "max_autotune_pointwise": False}
TRITON_CE = {"cross_entropy": "triton"}
BF16_WEIGHTS = {"param_dtype": "bfloat16"}
FUSED = {**TRITON_CE, **BF16_WEIGHTS}
GELU = {"mlp": "triton_gelu_backward"}
LINEAR_CE = {**BF16_WEIGHTS, **GELU, "cross_entropy": "triton_linear"}
CUBLASLT_GELU = {**FUSED, "mlp": "cublaslt_gelu"}
CUBLASLT_BIAS = {**FUSED, **GELU, "linear": "cublaslt_bias_grad"}
CUBLASLT_BOTH = {**CUBLASLT_GELU, "linear": "cublaslt_bias_grad"}
EPILOGUES = {"mlp": "cublaslt_epilogues"}
TUNED_GEMMS = {"linear": "tuned"}
PINNED = {"pin_memory": True, "non_blocking": True}  # no host sync at each batch's copy
# The stack before the suite's took the sweep's best candidates (pinned copies, the Triton cross-entropy,
# bfloat16 weights, the fused GELU backward, GELU's cuBLASLt epilogue, tuned GEMMs, batch 128): the
# candidates start from it.
EARLIER_STACK = stack.but(
    "earlier_stack",
    pin_memory=False,
    non_blocking=False,
    options={
        **stack.options,
        "batch_scale": 4,
        "cross_entropy": "torch",
        "param_dtype": "float32",
        "mlp": "torch",
        "linear": "torch",
    },
)


@dataclass(frozen=True)
class Candidate:
    options: dict[str, Any] = field(default_factory=dict)  # over the earlier stack's
    fields: dict[str, Any] = field(default_factory=dict)  # other Optimization fields
    inductor: dict[str, Any] = field(default_factory=dict)  # Inductor settings while it compiles
    mode: str = "reduce-overhead"  # torch.compile mode
    blas: str | None = None  # torch.backends.cuda.preferred_blas_library while it runs ("cublaslt")


CANDIDATES = {
    "earlier_stack": Candidate(),
    "stack": Candidate(  # the suite's
        {**LINEAR_CE, **EPILOGUES, **TUNED_GEMMS, "batch_scale": 16}, PINNED
    ),
    "cublaslt_gelu_stack": Candidate(CUBLASLT_GELU, PINNED),  # the suite's before tuning
    "tuned": Candidate({**CUBLASLT_GELU, **TUNED_GEMMS}, PINNED),
    "tuned_b128": Candidate({**CUBLASLT_GELU, **TUNED_GEMMS, "batch_scale": 16}, PINNED),
    "tuned_linear_ce": Candidate({**LINEAR_CE, "mlp": "cublaslt_gelu", **TUNED_GEMMS}, PINNED),
    "tuned_dgelu": Candidate({**FUSED, **EPILOGUES, **TUNED_GEMMS}, PINNED),
    "tuned_dgelu_linear_ce": Candidate({**LINEAR_CE, **EPILOGUES, **TUNED_GEMMS}, PINNED),
    "cublaslt_gelu_b64": Candidate({**CUBLASLT_GELU, "batch_scale": 8}, PINNED),
    "cublaslt_gelu_b128": Candidate({**CUBLASLT_GELU, "batch_scale": 16}, PINNED),
    "fused_gelu_stack": Candidate({**FUSED, **GELU}, PINNED),  # the suite's before GELU's cuBLASLt epilogue
    "fused_cross_entropy": Candidate(TRITON_CE),
    "coordinate_descent": Candidate(inductor=TUNED),
    "fused_ce_coordinate_descent": Candidate(TRITON_CE, inductor=TUNED),
    "flash_attention": Candidate({"attention": "flash"}),
    "b64_coordinate_descent": Candidate({"batch_scale": 8}, inductor=TUNED),
    "bf16_weights": Candidate(BF16_WEIGHTS),
    "fused_ce_bf16_weights": Candidate(FUSED),
    "fused_ce_max_autotune": Candidate(TRITON_CE, inductor=GEMM_TEMPLATES, mode="max-autotune"),
    "max_autotune": Candidate(inductor=GEMM_TEMPLATES, mode="max-autotune"),
    "pinned": Candidate(fields=PINNED),
    "pinned_fused_ce": Candidate(TRITON_CE, PINNED),
    "pinned_fused_ce_bf16_weights": Candidate(FUSED, PINNED),  # the suite's stack before the fused GELU
    "best_coordinate_descent": Candidate(FUSED, PINNED, TUNED),
    "best_aggressive_fusion": Candidate(FUSED, PINNED, {"aggressive_fusion": True, "combo_kernels": True}),
    "pinned_fused_ce_bf16_weights_b64": Candidate({**FUSED, "batch_scale": 8}, PINNED),
    "separate_qkv": Candidate({**FUSED, "separate_qkv": True}, PINNED),
    "separate_qkv_triton_gelu": Candidate({**FUSED, **GELU, "separate_qkv": True}, PINNED),
    "no_split_reductions": Candidate({**FUSED, **GELU}, PINNED, {"split_reductions": False}),
    "linear_cross_entropy": Candidate(LINEAR_CE, PINNED),
    "cublaslt": Candidate({**FUSED, **GELU}, PINNED, blas="cublaslt"),
    "linear_cross_entropy_cublaslt": Candidate(LINEAR_CE, PINNED, blas="cublaslt"),
    "cublaslt_gelu": Candidate(CUBLASLT_GELU, PINNED),
    "cublaslt_bias_grad": Candidate(CUBLASLT_BIAS, PINNED),
    "cublaslt_both": Candidate(CUBLASLT_BOTH, PINNED),
    "cublaslt_both_linear_ce": Candidate({**CUBLASLT_BOTH, "cross_entropy": "triton_linear"}, PINNED),
    "cooperative_reductions": Candidate(
        {**FUSED, **GELU}, PINNED, {"split_reductions": False, "triton.cooperative_reductions": True}
    ),
}
KINDS = [  # kernel kind: a pattern of its names (first match wins)
    ("GEMM", r"nvjet|gemm|cutlass|xmma|splitKreduce|triton_tem"),
    ("attention", r"sdpa|flash|fmha|cudnn"),
    ("cross-entropy", r"_loss_rows|_gradient_rows|_loss_and_gradient_rows|log_softmax|nll_loss"),
    ("optimizer", r"multi_tensor_apply"),
    ("Inductor elementwise and reductions", r"^triton_"),
    ("other", r""),
]


def kind_of(name: str) -> str:
    return next(kind for kind, pattern in KINDS if re.search(pattern, name))


def print_kernels(folder: Path, top: int = 12) -> None:
    """Kernel time of the traced iteration by kind, then its top kernels."""
    table = kernel_table(iteration_launches(read_torch_trace(folder / TRACE)))
    table["kind"] = table["name"].map(kind_of)
    kinds = table.groupby("kind")["total_ns"].sum().sort_values(ascending=False) / 1e6
    by_kind = ", ".join(f"{kind} {ms:.2f}" for kind, ms in kinds.items())
    print(f"  kernel time {table['total_ns'].sum() / 1e6:.2f} ms: {by_kind}")
    rows = table.head(top).assign(ms=table["total_ns"] / 1e6, name=table["name"].str.slice(0, 90))
    with pd.option_context("display.width", 200, "display.max_colwidth", 90):
        print(rows[["ms", "calls", "kind", "name"]].to_string(index=False, float_format="%.3f"), flush=True)


def print_tuning() -> None:
    """The GEMM shapes timed since the last call (custom_kernels/gemm_tuning.py): PyTorch's time, the choice's."""
    for key, times in timings().items():
        if key in _printed:
            continue
        _printed.add(key)
        choice = min(times, key=lambda name: times[name])
        torch_ms = f"PyTorch {times['torch']:.3f} ms, " if "torch" in times else ""
        print(f"  tuned {key}: {torch_ms}chose {choice} at {times[choice]:.3f} ms of {len(times)}", flush=True)


_printed: set[Any] = set()
STEADY = 5  # iterations traced back to back, as the timed ones run


def print_steady(case: Prepared, folder: Path) -> None:
    """Trace ``STEADY`` iterations in a row (the host queueing ahead, the GPU never idle) and print
    their kernel time and GPU span per iteration, to compare with a lone traced iteration's."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profiler:
        for _ in range(STEADY):
            case.step(case.fetch()[0])
        torch.cuda.synchronize()
    path = folder / "steady.json"
    profiler.export_chrome_trace(str(path))
    launches = read_torch_trace(path).launches
    span_ms = (launches["end"].max() - launches["start"].min()) / 1e6
    kernel_ms = (launches["end"] - launches["start"]).sum() / 1e6
    per_iteration = f"{kernel_ms / STEADY:.2f} ms of kernels, {span_ms / STEADY:.2f} ms span"
    print(f"  {STEADY} iterations in a row: per iteration {per_iteration}")


def tracer(folder: Path | None, device: torch.device) -> Any:
    """``then`` for run_case: trace one more iteration into ``folder``, then ``STEADY`` in a row
    (nothing without a folder)."""
    if folder is None:
        return None

    def trace(case: Prepared) -> None:
        marked_iteration(case, device, folder, torch_profiler=True, cuda_profiler=False)
        print_steady(case, folder)

    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), help="these candidates alone, in this order")
    parser.add_argument("--traces", type=Path, help="trace one more iteration of each candidate into this folder")
    args = parser.parse_args()
    device = torch.device("cuda")
    peak = (peak_tflops(torch.cuda.get_device_name()) or float("nan")) * 1e12
    chosen = args.only or list(CANDIDATES)
    for name in chosen:
        candidate = CANDIDATES[name]
        options = {**EARLIER_STACK.options, **candidate.options}
        case = EARLIER_STACK.but(name, options=options, compile_mode=candidate.mode, **candidate.fields)
        torch._dynamo.reset()  # else the loss function compiled for an earlier candidate is reused
        folder = args.traces / name if args.traces else None
        default_blas = torch.backends.cuda.preferred_blas_library()
        try:
            torch.backends.cuda.preferred_blas_library(candidate.blas or default_blas)
            with torch._inductor.config.patch(candidate.inductor):
                m = run_case(CaseSpec(GPT2(), case, device, FULL, args.warmup, args.iters), tracer(folder, device))
        except Exception:
            print(f"{name}: failed\n{traceback.format_exc(limit=3)}", flush=True)
            continue
        finally:
            torch.backends.cuda.preferred_blas_library(default_blas)
        median = stats.summarize(m.samples_ms).median
        tokens_per_s = m.per_second(m.samples_per_iteration, median)
        mfu = m.per_second(m.flops_per_iteration or 0.0, median) / peak
        print(
            f"{name}: {median:.2f} ms/iter, {tokens_per_s:,.0f} tokens/s, MFU {mfu:.1%}, "
            f"peak {(m.peak_memory_bytes or 0) / 2**30:.1f} GiB, first iteration {m.first_step_s:.0f} s, "
            f"val_loss {m.metric:.3f}",
            flush=True,
        )
        if folder is not None:
            print_kernels(folder)
        print_tuning()


if __name__ == "__main__":
    main()
