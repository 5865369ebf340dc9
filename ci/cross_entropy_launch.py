"""Time the one-kernel cross-entropy with its gradient (models/fused_cross_entropy.py) for several
launch shapes on this GPU, against the two kernels of the forward/backward version, at GPT-2's size.

    python ci/cross_entropy_launch.py [--rows 32768] [--vocab 50304]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import triton.testing

from models.fused_cross_entropy import _multiprocessors, fused_cross_entropy, loss_and_gradient

# programs per multiprocessor, warps, columns per load
HELD = [(1, 16), (1, 32), (2, 16), (2, 8)]  # a row held in registers: programs per SM, warps
LAUNCHES = [(1, 32, 16384), (1, 16, 8192), (2, 16, 8192), (3, 16, 8192), (2, 8, 4096), (4, 8, 4096), (8, 4, 2048)]


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]
def _held_rows(  # type: ignore[no-untyped-def]
    logits_ptr, targets_ptr, losses_ptr, grad_ptr, row_stride, vocab, rows, ROW: tl.constexpr
):
    """Rows ``program_id``, ``program_id + programs``, ...: each read once into registers (``ROW`` >= the
    vocabulary), its loss, and its part of the mean loss's gradient written from the registers."""
    columns = tl.arange(0, ROW)
    inside = columns < vocab
    for row in range(tl.program_id(0).to(tl.int64), rows, tl.num_programs(0)):
        x = tl.load(logits_ptr + row * row_stride + columns, mask=inside, other=-float("inf")).to(tl.float32)
        target = tl.load(targets_ptr + row)
        row_max = tl.max(x, axis=0)
        log_sum = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
        is_target = columns == target
        tl.store(losses_ptr + row, log_sum - tl.sum(tl.where(is_target, x, 0.0), axis=0))
        gradient = (tl.exp(x - log_sum) - tl.where(is_target, 1.0, 0.0)) / rows
        tl.store(grad_ptr + row * row_stride + columns, gradient.to(grad_ptr.dtype.element_ty), mask=inside)


def held_rows(
    logits: torch.Tensor, targets: torch.Tensor, per_sm: int, warps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss and gradient with each row held in registers: ``per_sm`` programs of ``warps`` warps per SM."""
    rows, vocab = logits.shape
    losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
    grad = torch.empty_like(logits)
    programs = min(rows, per_sm * _multiprocessors(logits.device))
    _held_rows[(programs,)](
        logits, targets, losses, grad, logits.stride(0), vocab, rows, ROW=triton.next_power_of_2(vocab), num_warps=warps
    )
    return losses, grad


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
    for per_sm, warps in HELD:
        try:
            losses, grad = held_rows(logits.detach(), targets, per_sm, warps)
        except Exception as error:  # a launch that does not fit the registers: say so, go on
            print(f"held rows {per_sm} x {warps} warps: failed: {str(error)[:200]}", flush=True)
            continue
        loss_error = (losses - expected).abs().max().item()
        grad_error = (grad.float() - expected_grad.float()).abs().max().item()
        ms = milliseconds(functools.partial(held_rows, logits.detach(), targets, per_sm, warps))
        print(
            f"held rows {per_sm} per SM x {warps} warps: {ms:.4f} ms, {2 * size / ms / 1e9:.2f} TB/s, "
            f"max loss error {loss_error:.1e}, max gradient difference {grad_error:.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
