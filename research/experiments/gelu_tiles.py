"""Time the Triton GELU-and-bias backward kernel (custom_kernels/fused_gelu.py) for several tile shapes on this
GPU, against what Inductor compiles for the same two results, at GPT-2's up-projection size.

    python research/experiments/gelu_tiles.py [--rows 32768] [--columns 3072]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
import triton
import triton.testing

from custom_kernels.fused_gelu import gelu_backward_and_bias_grad

TILES = [(64, 128, 4), (64, 128, 8), (32, 256, 4), (32, 256, 8), (64, 256, 8), (128, 128, 8), (16, 512, 4)]


def inductor_reference(grad: torch.Tensor, pre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.enable_grad():
        leaf = pre.detach().requires_grad_()
        (grad_pre,) = torch.autograd.grad(F.gelu(leaf, approximate="tanh"), leaf, grad)
    return grad_pre, grad_pre.float().sum(0)


def milliseconds(run: Callable[[], object]) -> float:
    """Median time of ``run`` by Triton's benchmark helper (warm-up, L2 flushed before each call)."""
    return float(triton.testing.do_bench(run, return_mode="median"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--columns", type=int, default=3072)
    args = parser.parse_args()
    shape = (args.rows, args.columns)
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    pre = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    moved = 3 * grad.numel() * grad.element_size()  # read grad and pre, write the result
    compiled = torch.compile(inductor_reference)
    expected, expected_sum = compiled(grad, pre)
    print(f"Inductor: {milliseconds(lambda: compiled(grad, pre)):.4f} ms")
    for tile in TILES:
        out, bias_grad = gelu_backward_and_bias_grad(grad, pre, tile)
        error = (out.float() - expected.float()).abs().max().item()
        sum_error = ((bias_grad - expected_sum).abs().max() / expected_sum.abs().max()).item()
        ms = milliseconds(functools.partial(gelu_backward_and_bias_grad, grad, pre, tile))
        print(f"tile {tile}: {ms:.4f} ms, {moved / ms / 1e9:.2f} TB/s, max error {error:.2e}, bias {sum_error:.1e}")


if __name__ == "__main__":
    main()
