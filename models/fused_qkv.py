"""The packed query-key-value projection, split into attention heads, whose backward pass assembles the
packed gradient and the bias gradient in one Triton kernel.

Compiled, the backward pass of ``qkv(x).chunk(3)`` viewed as heads runs one kernel that concatenates
the attention's dQ, dK and dV (batch x heads x tokens x head width each) back into the packed
tokens x 3 width layout, and a second that reads them again to sum the bias gradient. Here each program
copies a tile of tokens of one head into the packed layout and stores that tile's column sums; the few
rows of partial sums are added up after it.

On a machine without a GPU, set ``TRITON_INTERPRET=1`` before this module is imported and the kernel
runs in Triton's interpreter (tests only: it is slow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import triton
import triton.language as tl

from models.linear_parts import linear_backward, linear_forward

TILE_TOKENS = 64
Heads = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]  # typed only where Triton is installed
def _heads_to_rows(  # type: ignore[no-untyped-def]  # Triton types its pointer parameters
    heads_ptr,
    packed_ptr,
    partial_sums_ptr,
    tokens,
    length,
    stride_batch,
    stride_head,
    stride_token,
    packed_width,
    first_column,
    TILE: tl.constexpr,
    HEAD_WIDTH: tl.constexpr,
):
    """One tile of tokens of one head: copied into the packed rows, its column sums stored."""
    tile, head = tl.program_id(0), tl.program_id(1)
    token = tile * TILE + tl.arange(0, TILE)
    lane = tl.arange(0, HEAD_WIDTH)
    inside = token[:, None] < tokens
    batch, position = token // length, token % length
    source = batch.to(tl.int64) * stride_batch + head * stride_head + position.to(tl.int64) * stride_token
    values = tl.load(heads_ptr + source[:, None] + lane[None, :], mask=inside, other=0.0)
    column = first_column + head * HEAD_WIDTH + lane
    tl.store(packed_ptr + token[:, None].to(tl.int64) * packed_width + column[None, :], values, mask=inside)
    tl.store(partial_sums_ptr + tile * packed_width + column, tl.sum(values.to(tl.float32), axis=0))


def pack_heads_and_bias_grad(grads: Heads) -> tuple[torch.Tensor, torch.Tensor]:
    """(dQ, dK, dV as packed rows: tokens x 3 width, their sum over tokens in float32), from three
    batch x heads x tokens x head-width tensors whose last dimension is contiguous."""
    batch, heads, length, head_width = grads[0].shape
    if head_width & (head_width - 1):
        raise ValueError(f"the head width must be a power of two for this kernel, got {head_width}")
    tokens, width = batch * length, heads * head_width
    packed = torch.empty(tokens, 3 * width, dtype=grads[0].dtype, device=grads[0].device)
    tiles = triton.cdiv(tokens, TILE_TOKENS)
    partial_sums = torch.empty(tiles, 3 * width, dtype=torch.float32, device=packed.device)
    for part, grad in enumerate(grads):
        if grad.stride(3) != 1:
            grad = grad.contiguous()
        _heads_to_rows[(tiles, heads)](
            grad,
            packed,
            partial_sums,
            tokens,
            length,
            grad.stride(0),
            grad.stride(1),
            grad.stride(2),
            3 * width,
            part * width,
            TILE=TILE_TOKENS,
            HEAD_WIDTH=head_width,
        )
    return packed, partial_sums.sum(0)


class _PackedHeads(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, heads: int) -> Heads:
        linear = linear_forward(x, weight, bias)
        ctx.save_for_backward(linear.inputs, linear.weight)
        ctx.dtypes = linear.dtypes
        batch, length, width = x.shape[0], x.shape[1], weight.shape[0] // 3
        split = linear.output.view(batch, length, 3, heads, width // heads)
        q, k, v = (split[:, :, part].transpose(1, 2) for part in range(3))
        return q, k, v

    @staticmethod
    def backward(
        ctx: Any, grad_q: torch.Tensor, grad_k: torch.Tensor, grad_v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        inputs, weight = ctx.saved_tensors
        packed, bias_grad = pack_heads_and_bias_grad((grad_q, grad_k, grad_v))
        grad_x, grad_weight, grad_bias = linear_backward(packed.to(weight.dtype), bias_grad, inputs, weight, ctx.dtypes)
        return grad_x.view(grad_q.shape[0], grad_q.shape[2], -1), grad_weight, grad_bias, None


def packed_heads(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, heads: int) -> Heads:
    """Queries, keys and values (each batch x heads x tokens x head width) of ``x`` (batch x tokens x
    width) through the packed projection ``weight`` (3 width x width) and ``bias``, under autocast as a
    linear layer is."""
    apply = cast(Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], Heads], _PackedHeads.apply)
    return apply(x, weight, bias, heads)
