"""Cross-entropy over a language model's logits as one Triton kernel that also writes the gradient.

Eager PyTorch under bf16 autocast runs ``cross_entropy`` in float32: it copies the logits to float32,
writes their log-softmax, and in the backward pass writes a float32 gradient that is cast back to
bf16, each a tensor of tokens x vocabulary. This kernel reads each row of bf16 logits twice (the
running max and sum of exponentials, then the softmax) and writes the row's loss and its gradient
``(softmax - onehot) / rows`` in the logits' dtype; the backward pass only scales that gradient.

On a machine without a GPU, set ``TRITON_INTERPRET=1`` before this module is imported and the kernel
runs in Triton's interpreter (tests only: it is slow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]  # typed only where Triton is installed
def _cross_entropy_rows(  # type: ignore[no-untyped-def]  # Triton types its pointer parameters
    logits_ptr,
    targets_ptr,
    losses_ptr,
    grad_ptr,
    row_stride,
    vocab,
    scale,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * row_stride
    grad_row = grad_ptr + row * row_stride
    target = tl.load(targets_ptr + row)
    # scalar float32 accumulators, typed as the loop's updates are
    running_max = tl.max(tl.full([BLOCK_SIZE], -float("inf"), tl.float32), axis=0)
    running_sum = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
    for start in range(0, vocab, BLOCK_SIZE):
        columns = start + tl.arange(0, BLOCK_SIZE)
        block = tl.load(logits_row + columns, mask=columns < vocab, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(block, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(block - new_max), axis=0)
        running_max = new_max
    log_sum = running_max + tl.log(running_sum)
    target_logit = tl.load(logits_row + target).to(tl.float32)
    tl.store(losses_ptr + row, log_sum - target_logit)
    for start in range(0, vocab, BLOCK_SIZE):
        columns = start + tl.arange(0, BLOCK_SIZE)
        block = tl.load(logits_row + columns, mask=columns < vocab, other=-float("inf")).to(tl.float32)
        gradient = tl.exp(block - log_sum) - tl.where(columns == target, 1.0, 0.0)
        tl.store(grad_row + columns, (gradient * scale).to(grad_ptr.dtype.element_ty), mask=columns < vocab)


class _FusedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows, vocab = logits.shape
        logits = logits.contiguous()
        losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
        grad = torch.empty_like(logits)
        _cross_entropy_rows[(rows,)](
            logits, targets.contiguous(), losses, grad, logits.stride(0), vocab, 1.0 / rows, BLOCK_SIZE=BLOCK
        )
        ctx.save_for_backward(grad)
        return losses.mean()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (grad,) = ctx.saved_tensors
        return grad * grad_output.to(grad.dtype), None


def fused_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` (rows x vocabulary, any float dtype) against ``targets`` (rows),
    in float32, its gradient computed in the same kernel."""
    apply = cast(Callable[[torch.Tensor, torch.Tensor], torch.Tensor], _FusedCrossEntropy.apply)
    return apply(logits, targets)
