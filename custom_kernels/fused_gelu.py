"""A linear layer followed by GPT-2's tanh GELU whose backward pass computes GELU's gradient and the
bias gradient in one Triton kernel.

Compiled, the up-projection's backward pass runs one kernel that writes GELU's gradient (reading the
incoming gradient and the saved pre-activation) and a second that reads them again to sum the bias
gradient over the tokens. Here one kernel does both: each tile writes its part of GELU's gradient and
the column sums of that part; the few rows of partial sums are added up after it.

On a machine without a GPU, set ``TRITON_INTERPRET=1`` before this module is imported and the kernel
runs in Triton's interpreter (tests only: it is slow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import triton
import triton.language as tl

from custom_kernels.autocast import linear_dtype
from custom_kernels.cublaslt_epilogues import linear_gelu_saving_input
from custom_kernels.tuned_gemm import tuned_mm

TILE = (64, 128, 8)  # rows, columns, warps per tile: research/experiments/gelu_tiles.py on the H100


@triton.jit  # type: ignore[untyped-decorator, unused-ignore]  # typed only where Triton is installed
def _gelu_backward_tiles(  # type: ignore[no-untyped-def]  # Triton types its pointer parameters
    grad_ptr,
    pre_ptr,
    out_ptr,
    partial_sums_ptr,
    rows,
    columns,
    TILE_M: tl.constexpr,
    TILE_N: tl.constexpr,
):
    """One tile: GELU's gradient ``grad * gelu'(pre)``, stored, and its column sums, stored as the
    tile's row of partial bias gradients."""
    tile_row, tile_column = tl.program_id(0), tl.program_id(1)
    row = tile_row * TILE_M + tl.arange(0, TILE_M)
    column = tile_column * TILE_N + tl.arange(0, TILE_N)
    inside = (row[:, None] < rows) & (column[None, :] < columns)
    offsets = row[:, None].to(tl.int64) * columns + column[None, :]
    grad = tl.load(grad_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    x = tl.load(pre_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    # GELU(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3); literals: a kernel reads no globals
    inner = tl.minimum(tl.maximum(0.7978845608028654 * (x + 0.044715 * x * x * x), -20.0), 20.0)  # tanh = +-1
    tanh = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    slope = 0.5 * (1.0 + tanh) + 0.5 * x * (1.0 - tanh * tanh) * 0.7978845608028654 * (1.0 + 0.134145 * x * x)
    result = (grad * slope).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offsets, result, mask=inside)
    column_sums = tl.sum(result.to(tl.float32), axis=0)  # of the stored values, as a separate sum would
    tl.store(partial_sums_ptr + tile_row * columns + column, column_sums, mask=column < columns)


def gelu_backward_and_bias_grad(
    grad: torch.Tensor, pre: torch.Tensor, tile: tuple[int, int, int] = TILE
) -> tuple[torch.Tensor, torch.Tensor]:
    """(GELU's gradient at ``pre`` times ``grad``, its sum over rows in float32), for 2-D contiguous
    ``grad`` and ``pre`` of one shape; ``tile``: rows, columns and warps of each program."""
    rows, columns = pre.shape
    tile_rows, tile_columns, warps = tile
    out = torch.empty_like(pre)
    row_tiles = triton.cdiv(rows, tile_rows)
    partial_sums = torch.empty(row_tiles, columns, dtype=torch.float32, device=pre.device)
    grid = (row_tiles, triton.cdiv(columns, tile_columns))
    _gelu_backward_tiles[grid](
        grad, pre, out, partial_sums, rows, columns, TILE_M=tile_rows, TILE_N=tile_columns, num_warps=warps
    )
    return out, partial_sums.sum(0)


class _LinearGelu(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, epilogue: bool, tuned: bool
    ) -> torch.Tensor:
        dtype = linear_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            inputs = x.reshape(-1, x.shape[-1]).to(dtype).contiguous()
            weight_used, bias_used = weight.to(dtype), bias.to(dtype)
            out: torch.Tensor
            pre: torch.Tensor
            if epilogue:
                out, pre = linear_gelu_saving_input(inputs, weight_used.contiguous(), bias_used, tuned)
            else:
                pre = (
                    tuned_mm(inputs, weight_used.t(), bias_used)
                    if tuned
                    else torch.addmm(bias_used, inputs, weight_used.t())
                )
                out = torch.nn.functional.gelu(pre, approximate="tanh")
        ctx.save_for_backward(inputs, weight_used, pre)
        ctx.dtypes = (x.dtype, weight.dtype, bias.dtype)
        ctx.tuned = tuned
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None, None]:
        inputs, weight, pre = ctx.saved_tensors
        x_dtype, weight_dtype, bias_dtype = ctx.dtypes
        grad_pre, bias_grad = gelu_backward_and_bias_grad(grad.reshape(pre.shape).to(pre.dtype).contiguous(), pre)
        product = tuned_mm if ctx.tuned else torch.mm
        grad_x = product(grad_pre, weight).view(*grad.shape[:-1], -1).to(x_dtype)
        return grad_x, product(grad_pre.t(), inputs).to(weight_dtype), bias_grad.to(bias_dtype), None, None


def linear_gelu(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, epilogue: bool = False, tuned: bool = False
) -> torch.Tensor:
    """``gelu(linear(x, weight, bias), approximate="tanh")``, under autocast as a linear layer is; with
    ``epilogue`` its forward GEMM applies GELU in cuBLASLt's epilogue (``custom_kernels/cublaslt_epilogues.py``);
    with ``tuned`` its GEMMs run the fastest cuBLAS algorithm for their shape (``custom_kernels/tuned_gemm.py``)."""
    apply = cast(Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool, bool], torch.Tensor], _LinearGelu.apply)
    return apply(x, weight, bias, epilogue, tuned)
