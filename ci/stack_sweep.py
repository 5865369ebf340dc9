"""Measure candidate GPT-2 'stack' combinations on this GPU, one line each, to choose the suite's stack.

    python ci/stack_sweep.py [--iters 20] [--warmup 5] [--only NAME...]

Each candidate is the suite's ``stack`` case (batch 32, compile, CUDA graphs, bfloat16 residual) with
another batch size, cross-entropy, attention backend or Inductor setting (coordinate descent tunes
each generated kernel's launch configuration by timing it); a candidate that fails prints its error and
the sweep goes on.
"""

from __future__ import annotations

import argparse
import traceback
from typing import Any

import torch
import torch._inductor.config
from trainperf import stats
from trainperf.device import peak_tflops
from trainperf.runner import run_case
from trainperf.workload import FULL

from models.gpt2 import GPT2
from perf_tests.test_gpt2 import stack

TUNED = {"coordinate_descent_tuning": True}
# name -> (options over the stack's, compile mode, Inductor settings while it compiles)
CANDIDATES: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "stack": ({}, "reduce-overhead", {}),
    "fused_cross_entropy": ({"cross_entropy": "triton"}, "reduce-overhead", {}),
    "coordinate_descent": ({}, "reduce-overhead", TUNED),
    "fused_ce_coordinate_descent": (
        {"cross_entropy": "triton"},
        "reduce-overhead",
        TUNED,
    ),
    "flash_attention": ({"attention": "flash"}, "reduce-overhead", {}),
    "b64_coordinate_descent": ({"batch_scale": 8}, "reduce-overhead", TUNED),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), help="these candidates alone, in this order")
    args = parser.parse_args()
    device = torch.device("cuda")
    peak = (peak_tflops(torch.cuda.get_device_name()) or float("nan")) * 1e12
    chosen = args.only or list(CANDIDATES)
    for name in chosen:
        options, mode, inductor = CANDIDATES[name]
        case = stack.but(name, options={**stack.options, **options}, compile_mode=mode)
        torch._dynamo.reset()  # else the loss function compiled for an earlier candidate is reused
        try:
            with torch._inductor.config.patch(inductor):
                m = run_case(GPT2(), case, device, FULL, args.warmup, args.iters)
        except Exception:
            print(f"{name}: failed\n{traceback.format_exc(limit=3)}", flush=True)
            continue
        median = stats.summarize(m.samples_ms).median
        tokens_per_s = m.per_second(m.samples_per_iteration, median)
        mfu = m.per_second(m.flops_per_iteration or 0.0, median) / peak
        print(
            f"{name}: {median:.2f} ms/iter, {tokens_per_s:,.0f} tokens/s, MFU {mfu:.1%}, "
            f"peak {(m.peak_memory_bytes or 0) / 2**30:.1f} GiB, first iteration {m.first_step_s:.0f} s, "
            f"val_loss {m.metric:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
