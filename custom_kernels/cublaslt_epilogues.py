"""GEMMs with cuBLASLt's epilogues, which PyTorch calls without them: GELU in the up-projection's GEMM,
GELU's gradient in the GEMM that carries the gradient back through the down-projection, and a linear
layer's bias gradient in its weight-gradient GEMM.

- ``linear_gelu_saving_input`` (``GELU_AUX_BIAS``): the up-projection's GEMM adds the bias and writes
  GELU of the result and, as its auxiliary output, the pre-activation that the backward pass needs;
  compiled, GELU is a kernel of its own that reads the GEMM's output and writes GELU's.
- ``gelu_grad_through`` (``DGELU``): the GEMM ``grad @ weight`` through the down-projection multiplies
  its result by GELU's derivative at that saved pre-activation, so the gradient at GELU's output never
  goes to memory (``custom_kernels/epilogue_mlp.py``).
- ``weight_and_bias_grad`` (``BGRADB``): the weight-gradient GEMM ``grad.T @ inputs`` also sums
  ``grad`` over the rows it reads anyway, the bias gradient; compiled, that sum is a kernel of its own
  that reads ``grad`` again. ``linear`` is a linear layer whose backward pass uses it.

All are custom operators (``torch.library``), opaque to the compiler and recorded in CUDA graphs like
any kernel; on the CPU they run the same arithmetic in PyTorch, so that the autograd plumbing around
them is tested there. The GEMMs go through ``custom_kernels/cublaslt.py``; the bias gradient has the GEMM's
dtype. With ``tuned`` an operator runs the fastest of the algorithms cuBLASLt offers, timed at the
shape's first call (``custom_kernels/gemm_tuning.py``), instead of the first. cuBLASLt's ``DGELU_BGRAD`` is not
used: it runs a separate epilogue kernel (research/evidence/h100-transformer-ladder.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F

from custom_kernels.autocast import linear_dtype
from custom_kernels.cublaslt import (
    EPILOGUE_BGRADB,
    EPILOGUE_DEFAULT,
    EPILOGUE_DGELU,
    EPILOGUE_GELU_AUX_BIAS,
    algorithm_count,
    gemm_with_epilogue,
)
from custom_kernels.gemm_tuning import fastest


@torch.library.custom_op("trainperf::linear_gelu_saving_input", mutates_args=())
def linear_gelu_saving_input(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, tuned: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``gelu(x @ weight.T + bias)`` with tanh, ``x @ weight.T + bias``) for 2-D contiguous tensors of
    one dtype: on CUDA one GEMM with cuBLASLt's GELU_AUX_BIAS epilogue, with ``tuned`` the fastest of
    the algorithms cuBLASLt offers for this shape (timed at its first call, ``custom_kernels/gemm_tuning.py``)
    rather than its first choice."""
    if x.device.type != "cuda":
        pre = torch.addmm(bias, x, weight.t())
        return F.gelu(pre, approximate="tanh"), pre
    pre = torch.empty(x.shape[0], weight.shape[0], dtype=x.dtype, device=x.device)

    def run(algorithm: int) -> torch.Tensor:
        return gemm_with_epilogue(weight, x, (True, False), EPILOGUE_GELU_AUX_BIAS, bias, pre, algorithm)

    if not tuned:
        return run(0), pre
    key = ("gelu_aux_bias", x.device.index, x.dtype, tuple(x.shape), weight.shape[0])
    offered = range(algorithm_count(weight, x, (True, False), EPILOGUE_GELU_AUX_BIAS))
    return run(fastest(key, offered, run)), pre


@linear_gelu_saving_input.register_fake
def _(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, tuned: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (x.shape[0], weight.shape[0])
    return x.new_empty(shape), x.new_empty(shape)


@torch.library.custom_op("trainperf::weight_and_bias_grad", mutates_args=())
def weight_and_bias_grad(
    grad: torch.Tensor, inputs: torch.Tensor, tuned: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """A linear layer's (weight gradient ``grad.T @ inputs``, bias gradient ``grad.sum(0)``) for 2-D
    contiguous tensors of one dtype: on CUDA one GEMM with cuBLASLt's BGRADB epilogue. With ``tuned``
    the fastest for this shape (timed at its first call) of that GEMM's algorithms and of a plain GEMM
    (PyTorch's or cuBLASLt's algorithms) followed by a sum."""
    if grad.device.type != "cuda":
        return grad.t() @ inputs, grad.sum(0)
    transpose = (False, True)

    def fused(algorithm: int) -> tuple[torch.Tensor, torch.Tensor]:
        bias_grad = torch.empty(grad.shape[1], dtype=grad.dtype, device=grad.device)
        return gemm_with_epilogue(inputs, grad, transpose, EPILOGUE_BGRADB, bias_grad, algorithm=algorithm), bias_grad

    def separate(algorithm: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        if algorithm is None:
            weight_grad = grad.t() @ inputs
        else:
            weight_grad = gemm_with_epilogue(inputs, grad, transpose, EPILOGUE_DEFAULT, algorithm=algorithm)
        return weight_grad, grad.sum(0, dtype=torch.float32).to(grad.dtype)

    def run(way: tuple[str, int | None]) -> tuple[torch.Tensor, torch.Tensor]:
        name, algorithm = way
        return separate(algorithm) if name == "separate" or algorithm is None else fused(algorithm)

    if not tuned:
        return fused(0)
    ways: list[tuple[str, int | None]] = [("separate", None)]
    for name, epilogue in (("separate", EPILOGUE_DEFAULT), ("fused", EPILOGUE_BGRADB)):
        ways += [(name, index) for index in range(algorithm_count(inputs, grad, transpose, epilogue))]
    key = ("weight_and_bias_grad", grad.device.index, grad.dtype, tuple(grad.shape), inputs.shape[1])
    return run(fastest(key, ways, run))


@weight_and_bias_grad.register_fake
def _(grad: torch.Tensor, inputs: torch.Tensor, tuned: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return grad.new_empty((grad.shape[1], inputs.shape[1])), grad.new_empty((grad.shape[1],))


@torch.library.custom_op("trainperf::gelu_grad_through", mutates_args=())
def gelu_grad_through(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor, tuned: bool = False) -> torch.Tensor:
    """The gradient at GELU's input (tanh GELU at ``pre``) of a layer ``weight`` after it, given the
    layer's output gradient ``grad``: ``gelu'(pre) * (grad @ weight)``, for 2-D contiguous tensors of
    one dtype. On CUDA one GEMM with cuBLASLt's DGELU epilogue, with ``tuned`` the fastest of the
    algorithms it offers for this shape."""
    if grad.device.type != "cuda":
        return torch.ops.aten.gelu_backward(grad @ weight, pre, approximate="tanh")  # type: ignore[no-any-return]

    def run(algorithm: int) -> torch.Tensor:
        return gemm_with_epilogue(weight, grad, (False, False), EPILOGUE_DGELU, aux=pre, algorithm=algorithm)

    if not tuned:
        return run(0)
    key = ("dgelu", grad.device.index, grad.dtype, tuple(grad.shape), weight.shape[1])
    offered = range(algorithm_count(weight, grad, (False, False), EPILOGUE_DGELU))
    return run(fastest(key, offered, run))


@gelu_grad_through.register_fake
def _(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor, tuned: bool = False) -> torch.Tensor:
    return pre.new_empty(pre.shape)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        dtype = linear_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            inputs = x.reshape(-1, x.shape[-1]).to(dtype).contiguous()
            weight_used = weight.to(dtype)
            out = torch.addmm(bias.to(dtype), inputs, weight_used.t())
        ctx.save_for_backward(inputs, weight_used)
        ctx.dtypes = (x.dtype, weight.dtype, bias.dtype)
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        inputs, weight = ctx.saved_tensors
        x_dtype, weight_dtype, bias_dtype = ctx.dtypes
        grad_out = grad.reshape(-1, grad.shape[-1]).to(inputs.dtype).contiguous()
        weight_grad, bias_grad = weight_and_bias_grad(grad_out, inputs)
        grad_x = (grad_out @ weight).view(*grad.shape[:-1], -1)
        return grad_x.to(x_dtype), weight_grad.to(weight_dtype), bias_grad.to(bias_dtype)


class EpilogueLinear(torch.nn.Linear):
    """``nn.Linear`` (with a bias) whose backward pass is ``_Linear``'s."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``torch.nn.functional.linear(x, weight, bias)``, under autocast as it is, whose bias gradient is
    summed in the weight-gradient GEMM's epilogue on CUDA."""
    apply = cast(Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], _Linear.apply)
    return apply(x, weight, bias)
