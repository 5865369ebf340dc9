"""Time the one-kernel cross-entropy with its gradient (custom_kernels/fused_cross_entropy.py) for several
launch shapes on this GPU, against the two kernels of the forward/backward version, at GPT-2's size.

    python research/experiments/cross_entropy_launch.py [--rows 32768] [--vocab 50304]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
import triton.testing

from custom_kernels.fused_cross_entropy import fused_cross_entropy, loss_and_gradient

# programs per multiprocessor, warps, columns per load
LAUNCHES = [(1, 32, 16384), (1, 16, 8192), (2, 16, 8192), (3, 16, 8192), (2, 8, 4096), (4, 8, 4096), (8, 4, 2048)]


def milliseconds(run: Callable[[], object]) -> float:
    """Median time of ``run`` by Triton's benchmark helper (warm-up, L2 flushed before each call)."""
    return float(triton.testing.do_bench(run, return_mode="median"))


def two_kernels(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The forward/backward version: loss kernel, then gradient kernel."""
    loss = fused_cross_entropy(logits, targets)
    (grad,) = torch.autograd.grad(loss, logits)
    return grad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--vocab", type=int, default=50304)
    args = parser.parse_args()
    logits = (4 * torch.randn(args.rows, args.vocab, device="cuda")).to(torch.bfloat16).requires_grad_()
    targets = torch.randint(0, args.vocab, (args.rows,), device="cuda")
    size = logits.numel() * logits.element_size()
    expected = F.cross_entropy(logits.detach().float(), targets, reduction="none")
    expected_grad = two_kernels(logits, targets)
    ms = milliseconds(functools.partial(two_kernels, logits, targets))
    print(f"two kernels (read, read + write): {ms:.4f} ms, {3 * size / ms / 1e9:.2f} TB/s of logits moved")
    for launch in LAUNCHES:
        losses, grad = loss_and_gradient(logits.detach(), targets, launch)
        loss_error = (losses - expected).abs().max().item()
        grad_error = (grad.float() - expected_grad.float()).abs().max().item()
        ms = milliseconds(functools.partial(loss_and_gradient, logits.detach(), targets, launch))
        print(
            f"launch {launch}: {ms:.4f} ms, {2 * size / ms / 1e9:.2f} TB/s counting one read and one write, "
            f"max loss error {loss_error:.1e}, max gradient difference {grad_error:.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
