"""Time the GEMM with GELU's gradient in its epilogue (models/gelu_gemm.py) for several tile shapes on
this GPU, against what the fused GELU stack runs for the same results (a cuBLAS GEMM, then the Triton
GELU-and-bias kernel of models/fused_gelu.py), at GPT-2's down-projection size.

    python ci/gelu_gemm.py [--rows 32768] [--width 768]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import torch
import triton.testing

from models.fused_gelu import gelu_backward_and_bias_grad
from models.gelu_gemm import gelu_backward_through_linear

# rows, columns, depth, warps, stages, row tiles per group
TILES = [
    (128, 256, 64, 8, 3, 8),
    (128, 256, 64, 8, 4, 8),
    (128, 128, 64, 4, 4, 8),
    (128, 128, 64, 8, 3, 8),
    (256, 128, 64, 8, 3, 8),
    (128, 128, 128, 8, 3, 8),
]


def milliseconds(run: Callable[[], object]) -> float:
    """Median time of ``run`` by Triton's benchmark helper (warm-up, L2 flushed before each call)."""
    return float(triton.testing.do_bench(run, return_mode="median"))


def cublas_then_kernel(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return gelu_backward_and_bias_grad(grad @ weight, pre)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--width", type=int, default=768)
    args = parser.parse_args()

    def bf16(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    grad, weight, pre = (
        bf16(args.rows, args.width),
        0.02 * bf16(args.width, 4 * args.width),
        bf16(args.rows, 4 * args.width),
    )
    flops = 2 * args.rows * args.width * 4 * args.width
    expected, expected_sum = cublas_then_kernel(grad, weight, pre)
    ms = milliseconds(functools.partial(cublas_then_kernel, grad, weight, pre))
    gemm_ms = milliseconds(lambda: grad @ weight)
    print(f"cuBLAS GEMM then the GELU kernel: {ms:.4f} ms (the GEMM alone {gemm_ms:.4f} ms)")
    for tile in TILES:
        try:
            out, bias_grad = gelu_backward_through_linear(grad, weight, pre, tile)
            ms = milliseconds(functools.partial(gelu_backward_through_linear, grad, weight, pre, tile))
        except Exception as error:  # a tile that needs more shared memory than the GPU has
            print(f"tile {tile}: failed: {str(error).splitlines()[0][:120]}")
            continue
        error_max = (out.float() - expected.float()).abs().max().item()
        sum_error = ((bias_grad - expected_sum).abs().max() / expected_sum.abs().max()).item()
        print(
            f"tile {tile}: {ms:.4f} ms, {flops / ms / 1e9:.0f} TFLOP/s, "
            f"max difference {error_max:.2e}, bias {sum_error:.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
