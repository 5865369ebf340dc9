"""GPT-2's MLP whose backward pass computes GELU's gradient and the up-projection's bias gradient in the
epilogue of a Triton GEMM: the one that carries the gradient back through the down-projection.

With ``models/fused_gelu.py`` that GEMM (cuBLAS) writes the gradient at GELU's output, and a Triton
kernel reads it back with the saved pre-activation to write GELU's gradient and the bias's partial
sums. Here each GEMM tile applies GELU's derivative to its accumulator while it is still on chip and
stores GELU's gradient and its column sums: the gradient at GELU's output never goes to memory.

On a machine without a GPU, set ``TRITON_INTERPRET=1`` before this module is imported and the kernel
runs in Triton's interpreter (tests only: it is slow).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from models.fused_gelu import gelu_slope
from models.transformer import linear_dtype

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# rows, columns and depth of a tile, warps, pipeline stages, tiles grouped along rows: ci/gelu_gemm.py
TILE = (128, 256, 64, 8, 3, 8)


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]  # typed only where Triton is installed
def _gemm_gelu_backward(  # type: ignore[no-untyped-def]  # Triton types its pointer parameters
    grad_ptr,
    weight_ptr,
    pre_ptr,
    out_ptr,
    partial_sums_ptr,
    rows,
    columns,
    depth,
    TILE_M: tl.constexpr,
    TILE_N: tl.constexpr,
    TILE_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """One tile of ``(grad @ weight) * gelu'(pre)``, stored, and its column sums, stored as the tile's
    row of partial bias gradients; ``grad`` is rows x depth, ``weight`` depth x columns, row-major."""
    program = tl.program_id(0)
    row_tiles, column_tiles = tl.cdiv(rows, TILE_M), tl.cdiv(columns, TILE_N)
    group = program // (GROUP_M * column_tiles)  # GROUP_M row tiles sweep the columns together (L2 reuse)
    first_row_tile = group * GROUP_M
    group_rows = min(row_tiles - first_row_tile, GROUP_M)
    tile_row = first_row_tile + (program % (GROUP_M * column_tiles)) % group_rows
    tile_column = (program % (GROUP_M * column_tiles)) // group_rows
    row = tile_row * TILE_M + tl.arange(0, TILE_M)
    column = tile_column * TILE_N + tl.arange(0, TILE_N)
    inner = tl.arange(0, TILE_K)
    accumulator = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for start in range(0, depth, TILE_K):
        k = start + inner
        a = tl.load(
            grad_ptr + row[:, None].to(tl.int64) * depth + k[None, :],
            mask=(row[:, None] < rows) & (k[None, :] < depth),
            other=0.0,
        )
        b = tl.load(
            weight_ptr + k[:, None] * columns + column[None, :],
            mask=(k[:, None] < depth) & (column[None, :] < columns),
            other=0.0,
        )
        if UPCAST:  # Triton's interpreter multiplies 16-bit floats wrongly
            a, b = a.to(tl.float32), b.to(tl.float32)
        accumulator = tl.dot(a, b, accumulator)
    inside = (row[:, None] < rows) & (column[None, :] < columns)
    offsets = row[:, None].to(tl.int64) * columns + column[None, :]
    x = tl.load(pre_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    result = (accumulator * gelu_slope(x)).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offsets, result, mask=inside)
    column_sums = tl.sum(result.to(tl.float32), axis=0)  # of the stored values, as a separate sum would
    tl.store(partial_sums_ptr + tile_row * columns + column, column_sums, mask=column < columns)


def gelu_backward_through_linear(
    grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor, tile: tuple[int, ...] = TILE
) -> tuple[torch.Tensor, torch.Tensor]:
    """For ``linear(gelu(pre), weight)`` and its output's gradient ``grad``: (the gradient at ``pre``,
    ``(grad @ weight) * gelu'(pre)``, and its sum over rows in float32, the bias gradient of the layer
    that produced ``pre``); 2-D contiguous tensors of one dtype. ``tile``: see ``TILE``."""
    rows, depth = grad.shape
    columns = weight.shape[1]
    tile_m, tile_n, tile_k, warps, stages, group_m = tile
    out = torch.empty_like(pre)
    row_tiles = triton.cdiv(rows, tile_m)
    partial_sums = torch.empty(row_tiles, columns, dtype=torch.float32, device=pre.device)
    grid = (row_tiles * triton.cdiv(columns, tile_n),)
    _gemm_gelu_backward[grid](
        grad, weight, pre, out, partial_sums, rows, columns, depth,
        TILE_M=tile_m, TILE_N=tile_n, TILE_K=tile_k, GROUP_M=group_m, UPCAST=INTERPRETED,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return out, partial_sums.sum(0)


class _GeluMlp(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, *parameters: torch.Tensor) -> torch.Tensor:
        dtype = linear_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            inputs = x.reshape(-1, x.shape[-1]).to(dtype)
            up_w, up_b, down_w, down_b = (p.to(dtype) for p in parameters)
            pre = torch.addmm(up_b, inputs, up_w.t())
            hidden = F.gelu(pre, approximate="tanh")
            out = torch.addmm(down_b, hidden, down_w.t())
        ctx.save_for_backward(inputs, up_w, down_w, pre, hidden)
        ctx.dtypes = [t.dtype for t in (x, *parameters)]
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        inputs, up_w, down_w, pre, hidden = ctx.saved_tensors
        grad_out = grad.reshape(-1, grad.shape[-1]).to(pre.dtype).contiguous()
        grad_pre, grad_up_b = gelu_backward_through_linear(grad_out, down_w.contiguous(), pre)
        grads = (
            (grad_pre @ up_w).view(*grad.shape[:-1], -1),
            grad_pre.t() @ inputs,
            grad_up_b,
            grad_out.t() @ hidden,
            grad_out.sum(0),
        )
        return tuple(g.to(dtype) for g, dtype in zip(grads, ctx.dtypes, strict=True))


def gelu_mlp(
    x: torch.Tensor, up_w: torch.Tensor, up_b: torch.Tensor, down_w: torch.Tensor, down_b: torch.Tensor
) -> torch.Tensor:
    """``linear(gelu(linear(x, up_w, up_b), approximate="tanh"), down_w, down_b)``, under autocast as
    linear layers are, whose backward pass runs GELU's gradient in a Triton GEMM's epilogue."""
    apply = cast(Callable[..., torch.Tensor], _GeluMlp.apply)
    return apply(x, up_w, up_b, down_w, down_b)
