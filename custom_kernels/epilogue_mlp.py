"""GPT-2's MLP (up-projection, tanh GELU, down-projection) as one autograd function whose GEMMs apply
GELU and its gradient in cuBLASLt's epilogues (``custom_kernels/cublaslt_epilogues.py``).

Forward: the up-projection's GEMM writes GELU's output and keeps the pre-activation (``GELU_AUX_BIAS``).
Backward: the GEMM that carries the gradient back through the down-projection multiplies it by GELU's
derivative at the saved pre-activation (``DGELU``), so the gradient at GELU's output never goes to
memory; the up-projection's bias gradient is then a sum over the tokens, compiled with its neighbours.
With ``tuned`` every GEMM runs the fastest algorithm for its shape (``custom_kernels/tuned_gemm.py``), and the
up-projection's bias gradient is summed in its weight-gradient GEMM's epilogue (``BGRADB``) where
that is faster than a GEMM and a sum.

It is compared with the fused GELU backward of ``custom_kernels/fused_gelu.py`` (the GEMM, then a Triton
kernel reading its result again) by ``research/experiments/gelu_epilogue.py``; figures in
research/evidence/h100-transformer-ladder.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch

from custom_kernels.autocast import linear_dtype
from custom_kernels.cublaslt_epilogues import gelu_grad_through, linear_gelu_saving_input, weight_and_bias_grad
from custom_kernels.tuned_gemm import tuned_mm


class _EpilogueMLP(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        up_weight: torch.Tensor,
        up_bias: torch.Tensor,
        down_weight: torch.Tensor,
        down_bias: torch.Tensor,
        tuned: bool,
    ) -> torch.Tensor:
        dtype = linear_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            inputs = x.reshape(-1, x.shape[-1]).to(dtype).contiguous()
            up, down = up_weight.to(dtype).contiguous(), down_weight.to(dtype).contiguous()
            hidden, pre = linear_gelu_saving_input(inputs, up, up_bias.to(dtype), tuned)
            bias = down_bias.to(dtype)
            out = tuned_mm(hidden, down.t(), bias) if tuned else torch.addmm(bias, hidden, down.t())
        ctx.save_for_backward(inputs, up, pre, hidden, down)
        ctx.dtypes = (x.dtype, up_weight.dtype, up_bias.dtype, down_weight.dtype, down_bias.dtype)
        ctx.tuned = tuned
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        inputs, up, pre, hidden, down = ctx.saved_tensors
        x_dtype, up_dtype, up_bias_dtype, down_dtype, down_bias_dtype = ctx.dtypes
        product = tuned_mm if ctx.tuned else torch.mm
        grad_out = grad.reshape(-1, grad.shape[-1]).to(inputs.dtype).contiguous()
        grad_pre = gelu_grad_through(grad_out, down, pre, ctx.tuned)
        grad_x = product(grad_pre, up).view(*grad.shape[:-1], -1)
        if ctx.tuned:
            grad_up, grad_up_bias = weight_and_bias_grad(grad_pre, inputs, True)
        else:
            grad_up, grad_up_bias = product(grad_pre.t(), inputs), grad_pre.sum(0, dtype=torch.float32)
        return (
            grad_x.to(x_dtype),
            grad_up.to(up_dtype),
            grad_up_bias.to(up_bias_dtype),
            product(grad_out.t(), hidden).to(down_dtype),
            grad_out.sum(0, dtype=torch.float32).to(down_bias_dtype),
            None,
        )


def epilogue_mlp(
    x: torch.Tensor,
    up_weight: torch.Tensor,
    up_bias: torch.Tensor,
    down_weight: torch.Tensor,
    down_bias: torch.Tensor,
    tuned: bool = False,
) -> torch.Tensor:
    """``linear(gelu(linear(x, up_weight, up_bias), approximate="tanh"), down_weight, down_bias)``, under
    autocast as linear layers are, with GELU and its gradient in the GEMMs' epilogues."""
    apply = cast(Callable[..., torch.Tensor], _EpilogueMLP.apply)
    return apply(x, up_weight, up_bias, down_weight, down_bias, tuned)
