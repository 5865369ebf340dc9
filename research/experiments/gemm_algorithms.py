"""Time every GEMM of a GPT-2 training iteration as PyTorch runs it and with each algorithm cuBLASLt's
heuristic offers for it (custom_kernels/cublaslt_epilogues.py), to see whether its first choice is the fastest.

    python research/experiments/gemm_algorithms.py [--tokens 32768] [--width 768]

For each linear layer y = x W.T (W: out x in) the three GEMMs of training: forward ``x @ W.T``, the
input's gradient ``dy @ W`` and the weight's ``dy.T @ x``, in bfloat16. Times are medians of CUDA-event
timings of back-to-back calls.
"""

from __future__ import annotations

import argparse
import functools
import statistics
from collections.abc import Callable

import pandas as pd
import torch

from custom_kernels.cublaslt import EPILOGUE_DEFAULT, algorithm_count, gemm_with_epilogue
from custom_kernels.gemm_tuning import call_times

REPEATS = 10  # calls per timing
TIMINGS = 7  # timings per GEMM, the median kept


def milliseconds(run: Callable[[], object]) -> float:
    """Median time of one call of ``run``."""
    return statistics.median(call_times(run, REPEATS, TIMINGS, warmups=3))


def layers(width: int) -> dict[str, tuple[int, int]]:
    """GPT-2's linear layers: name -> (in, out)."""
    return {
        "qkv": (width, 3 * width),
        "out": (width, width),
        "up": (width, 4 * width),
        "down": (4 * width, width),
        "lm_head": (width, 50304),
    }


def gemms(
    tokens: int, features: tuple[int, int]
) -> dict[str, tuple[Callable[[], torch.Tensor], tuple[torch.Tensor, torch.Tensor, tuple[bool, bool]]]]:
    """The layer's three GEMMs: name -> (PyTorch's call, ``gemm_with_epilogue``'s operands)."""
    inputs, outputs = features

    def bf16(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    x, weight, grad = bf16(tokens, inputs), bf16(outputs, inputs) / inputs**0.5, bf16(tokens, outputs)
    return {
        "forward": (lambda: x @ weight.t(), (weight, x, (True, False))),
        "input grad": (lambda: grad @ weight, (weight, grad, (False, False))),
        "weight grad": (lambda: grad.t() @ x, (x, grad, (False, True))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=32768)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    rows = []
    for layer, features in layers(args.width).items():
        for kind, (torch_call, (a, b, transpose)) in gemms(args.tokens, features).items():
            expected = torch_call().float()
            count = algorithm_count(a, b, transpose, EPILOGUE_DEFAULT)
            times: list[tuple[float, int]] = []
            for algorithm in range(count):
                result = gemm_with_epilogue(a, b, transpose, EPILOGUE_DEFAULT, algorithm=algorithm).float()
                error = ((result - expected).norm() / expected.norm()).item()
                if error > 1e-2:
                    print(f"{layer} {kind}: algorithm {algorithm} differs from PyTorch by {error:.1e}, skipped")
                    continue
                run = functools.partial(gemm_with_epilogue, a, b, transpose, EPILOGUE_DEFAULT, algorithm=algorithm)
                times.append((milliseconds(run), algorithm))
            flops = 2.0 * args.tokens * features[0] * features[1]
            torch_ms = milliseconds(torch_call)
            best_ms, best = min(times)
            rows.append(
                {
                    "layer": layer,
                    "gemm": kind,
                    "torch ms": torch_ms,
                    "torch TFLOP/s": flops / torch_ms / 1e9,
                    "first choice ms": {i: t for t, i in times}.get(0, float("nan")),
                    "best ms": best_ms,
                    "best": best,
                    "offered": count,
                    "best TFLOP/s": flops / best_ms / 1e9,
                    "per iteration": 1 if layer == "lm_head" else args.layers,
                }
            )
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False, float_format="%.3f"))
    per_iteration = table["per iteration"]
    torch_total, best_total = (table[column].mul(per_iteration).sum() for column in ("torch ms", "best ms"))
    print(
        f"per iteration ({args.layers} layers): PyTorch's GEMMs {torch_total:.2f} ms, best offered {best_total:.2f} ms"
    )


if __name__ == "__main__":
    main()
