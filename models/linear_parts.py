"""A linear layer's forward and backward steps as plain functions, for the autograd functions that fuse
work into its backward pass (``models/fused_gelu.py``, ``models/fused_qkv.py``). They cast as autocast
would for a linear layer and hand each gradient back in its leaf's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LinearForward:
    inputs: torch.Tensor  # 2-D, in the compute dtype
    weight: torch.Tensor  # in the compute dtype
    output: torch.Tensor  # 2-D: inputs @ weight.T + bias
    dtypes: tuple[torch.dtype, torch.dtype, torch.dtype]  # of x, weight and bias as given


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype autocast gives a linear layer here (the input's without autocast)."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype


def linear_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> LinearForward:
    """``x @ weight.T + bias`` over ``x``'s last dimension, in the dtype autocast would use."""
    dtype = compute_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        inputs = x.reshape(-1, x.shape[-1]).to(dtype)
        weight_used = weight.to(dtype)
        output = torch.addmm(bias.to(dtype), inputs, weight_used.t())
    return LinearForward(inputs, weight_used, output, (x.dtype, weight.dtype, bias.dtype))


def linear_backward(
    grad_output: torch.Tensor,
    bias_grad: torch.Tensor,
    inputs: torch.Tensor,
    weight: torch.Tensor,
    dtypes: tuple[torch.dtype, torch.dtype, torch.dtype],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of x (2-D), weight and bias from the 2-D output gradient and the bias gradient
    already summed (the fused kernels sum it as they write ``grad_output``)."""
    x_dtype, weight_dtype, bias_dtype = dtypes
    return (grad_output @ weight).to(x_dtype), (grad_output.t() @ inputs).to(weight_dtype), bias_grad.to(bias_dtype)
