"""Cross-entropy over a language model's logits in Triton: as two kernels (one pass in the forward, one
in the backward), or with the output layer, its gradient computed in the forward pass.

Eager PyTorch under bf16 autocast runs ``cross_entropy`` in float32: it copies the logits to float32,
writes their log-softmax, and in the backward pass writes a float32 gradient that is cast back to
bf16, each a tensor of tokens x vocabulary.

``fused_cross_entropy``: the forward kernel reads each row of logits once (a running max and sum of
exponentials) and keeps only the row's log-sum-exp; the backward kernel reads the row again and writes
its gradient ``(softmax - onehot) * grad_output / rows`` in the logits' dtype, taking ``grad_output``
from the device (no host sync). The logits move 3 times (read, read, write): eager autocast moves them
more often; Inductor's compiled cross-entropy as often, but its forward reduction reads them at a lower
bandwidth (figures in research/evidence/h100-transformer-ladder.md).

``linear_cross_entropy``: the output layer's GEMM and the loss as one autograd function. One kernel
reads each row of logits twice, the second time hoping to find it in L2 (few programs run at once, each
a row at a time), and writes the loss and the mean loss's gradient ``(softmax - onehot) / rows``; the
logits are freed after the forward pass. The backward pass multiplies the output layer's two gradient
GEMMs' results by ``grad_output`` (tokens x width and vocabulary x width, not tokens x vocabulary). The
second read mostly misses L2, since enough programs to fill HBM's bandwidth hold too many rows
(``research/experiments/cross_entropy_launch.py``; figures in research/evidence/h100-transformer-ladder.md).

Every target must be a valid class (no ``ignore_index``). On a machine without a GPU, set
``TRITON_INTERPRET=1`` before this module is imported and the kernels run in Triton's interpreter
(tests only: it is slow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import triton
import triton.language as tl

from custom_kernels.autocast import linear_dtype
from custom_kernels.tuned_gemm import tuned_mm

BLOCK = 4096  # columns per load: 13 loads cover GPT-2's 50,304 padded classes
WARPS = 8
# linear_cross_entropy's kernel: programs per multiprocessor, warps, columns per load, the fastest that
# research/experiments/cross_entropy_launch.py timed
LAUNCH = (3, 16, 8192)


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]  # typed only where Triton is installed
def _log_sum_exp(  # type: ignore[no-untyped-def]  # Triton types its pointer parameters
    logits_row, vocab, BLOCK_SIZE: tl.constexpr, EVICTION: tl.constexpr
):
    """One row's log-sum-exp in float32, reading it once (a running max and sum of exponentials)."""
    # scalar float32 accumulators, typed as the loop's updates are
    running_max = tl.max(tl.full([BLOCK_SIZE], -float("inf"), tl.float32), axis=0)
    running_sum = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
    for start in range(0, vocab, BLOCK_SIZE):
        columns = start + tl.arange(0, BLOCK_SIZE)
        block = tl.load(logits_row + columns, mask=columns < vocab, other=-float("inf"), eviction_policy=EVICTION)
        block = block.to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(block, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(block - new_max), axis=0)
        running_max = new_max
    return running_max + tl.log(running_sum)


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]
def _loss_rows(  # type: ignore[no-untyped-def]
    logits_ptr,
    targets_ptr,
    losses_ptr,
    log_sums_ptr,
    row_stride,
    vocab,
    BLOCK_SIZE: tl.constexpr,
):
    """Per row: its log-sum-exp and its loss ``log-sum-exp - logit[target]``."""
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * row_stride
    log_sum = _log_sum_exp(logits_row, vocab, BLOCK_SIZE, "")
    target_logit = tl.load(logits_row + tl.load(targets_ptr + row)).to(tl.float32)
    tl.store(log_sums_ptr + row, log_sum)
    tl.store(losses_ptr + row, log_sum - target_logit)


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]
def _loss_and_gradient_rows(  # type: ignore[no-untyped-def]
    logits_ptr,
    targets_ptr,
    losses_ptr,
    grad_ptr,
    row_stride,
    vocab,
    rows,
    BLOCK_SIZE: tl.constexpr,
):
    """Rows ``program_id``, ``program_id + programs``, ...: each row's loss, and its part of the mean
    loss's gradient ``(softmax - onehot) / rows``. The first pass asks L2 to keep the row; the second
    reads it back from there, last block first, and writes the gradient past it."""
    for row in range(tl.program_id(0).to(tl.int64), rows, tl.num_programs(0)):  # 64-bit offsets
        row_offset = row * row_stride
        logits_row = logits_ptr + row_offset
        grad_row = grad_ptr + row_offset
        log_sum = _log_sum_exp(logits_row, vocab, BLOCK_SIZE, "evict_last")
        target = tl.load(targets_ptr + row)
        tl.store(losses_ptr + row, log_sum - tl.load(logits_row + target).to(tl.float32))
        last_start = tl.cdiv(vocab, BLOCK_SIZE) * BLOCK_SIZE - BLOCK_SIZE
        for step in range(0, vocab, BLOCK_SIZE):  # last block first: the most recently read is likeliest in L2
            columns = last_start - step + tl.arange(0, BLOCK_SIZE)
            inside = columns < vocab
            block = tl.load(logits_row + columns, mask=inside, other=0.0, eviction_policy="evict_first")
            gradient = (tl.exp(block.to(tl.float32) - log_sum) - tl.where(columns == target, 1.0, 0.0)) / rows
            tl.store(grad_row + columns, gradient.to(grad_ptr.dtype.element_ty), mask=inside, cache_modifier=".cs")


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]
def _gradient_rows(  # type: ignore[no-untyped-def]
    logits_ptr,
    targets_ptr,
    log_sums_ptr,
    grad_output_ptr,
    grad_ptr,
    row_stride,
    vocab,
    rows,
    BLOCK_SIZE: tl.constexpr,
):
    """Per row: ``(softmax - onehot) * grad_output / rows``, the mean loss's gradient."""
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * row_stride
    grad_row = grad_ptr + row * row_stride
    target = tl.load(targets_ptr + row)
    log_sum = tl.load(log_sums_ptr + row)
    scale = tl.load(grad_output_ptr).to(tl.float32) / rows
    for start in range(0, vocab, BLOCK_SIZE):
        columns = start + tl.arange(0, BLOCK_SIZE)
        block = tl.load(logits_row + columns, mask=columns < vocab, other=0.0).to(tl.float32)
        gradient = tl.exp(block - log_sum) - tl.where(columns == target, 1.0, 0.0)
        tl.store(grad_row + columns, (gradient * scale).to(grad_ptr.dtype.element_ty), mask=columns < vocab)


class _FusedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows, vocab = logits.shape
        logits, targets = logits.contiguous(), targets.contiguous()
        losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
        log_sums = torch.empty(rows, dtype=torch.float32, device=logits.device)
        _loss_rows[(rows,)](
            logits, targets, losses, log_sums, logits.stride(0), vocab, BLOCK_SIZE=BLOCK, num_warps=WARPS
        )
        ctx.save_for_backward(logits, targets, log_sums)
        return losses.mean()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, targets, log_sums = ctx.saved_tensors
        rows, vocab = logits.shape
        grad = torch.empty_like(logits)
        _gradient_rows[(rows,)](
            logits,
            targets,
            log_sums,
            grad_output.contiguous(),
            grad,
            logits.stride(0),
            vocab,
            rows,
            BLOCK_SIZE=BLOCK,
            num_warps=WARPS,
        )
        return grad, None


def fused_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` (rows x vocabulary, any float dtype) against ``targets`` (rows,
    each a valid class), in float32; its gradient has the logits' dtype."""
    apply = cast(Callable[[torch.Tensor, torch.Tensor], torch.Tensor], _FusedCrossEntropy.apply)
    return apply(logits, targets)


def _multiprocessors(device: torch.device) -> int:
    """The GPU's streaming multiprocessors (2 in Triton's interpreter, to run the row loop's stride)."""
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 2


def loss_and_gradient(
    logits: torch.Tensor, targets: torch.Tensor, launch: tuple[int, int, int] = LAUNCH
) -> tuple[torch.Tensor, torch.Tensor]:
    """(each row's cross-entropy in float32, the gradient of their mean with respect to ``logits`` in
    the logits' dtype) in one kernel; ``launch``: programs per multiprocessor, warps, columns per load."""
    rows, vocab = logits.shape
    logits, targets = logits.contiguous(), targets.contiguous()
    per_multiprocessor, warps, block = launch
    losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
    grad = torch.empty_like(logits)
    programs = min(rows, per_multiprocessor * _multiprocessors(logits.device))
    _loss_and_gradient_rows[(programs,)](
        logits, targets, losses, grad, logits.stride(0), vocab, rows, BLOCK_SIZE=block, num_warps=warps
    )
    return losses, grad


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, tuned: bool
    ) -> torch.Tensor:
        dtype = linear_dtype(hidden)
        product = tuned_mm if tuned else torch.mm
        with torch.autocast(hidden.device.type, enabled=False):
            inputs, weight_used = hidden.to(dtype), weight.to(dtype)
            losses, grad_logits = loss_and_gradient(product(inputs, weight_used.t()), targets)
        ctx.save_for_backward(inputs, weight_used, grad_logits)
        ctx.dtypes = (hidden.dtype, weight.dtype)
        ctx.tuned = tuned
        return losses.mean()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        inputs, weight, grad_logits = ctx.saved_tensors
        hidden_dtype, weight_dtype = ctx.dtypes
        product = tuned_mm if ctx.tuned else torch.mm
        grad_hidden = product(grad_logits, weight) * grad_output
        grad_weight = product(grad_logits.t(), inputs) * grad_output
        return grad_hidden.to(hidden_dtype), grad_weight.to(weight_dtype), None, None


def linear_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, tuned: bool = False
) -> torch.Tensor:
    """Mean cross-entropy of the logits ``hidden @ weight.T`` (rows x width by vocabulary x width, under
    autocast as a linear layer is) against ``targets`` (rows, each a valid class), in float32. Where a
    gradient is wanted the logits' gradient is computed in the forward pass and kept instead of them;
    without one, this is ``fused_cross_entropy`` of the logits. With ``tuned`` the output layer's GEMMs
    run the fastest cuBLAS algorithm for their shape (``custom_kernels/tuned_gemm.py``)."""
    if not (torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)):
        return fused_cross_entropy(torch.nn.functional.linear(hidden, weight), targets)
    apply = cast(Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor], _LinearCrossEntropy.apply)
    return apply(hidden, weight, targets, tuned)
