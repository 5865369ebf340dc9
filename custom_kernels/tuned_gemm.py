"""Matrix products whose cuBLAS algorithm is chosen by timing, and the linear layer built on them.

PyTorch's GEMMs run the algorithm cuBLAS's heuristic picks first, which for GPT-2's shapes is often not
the fastest one it offers (``research/experiments/gemm_algorithms.py``; figures in
research/evidence/h100-transformer-ladder.md). ``tuned_mm``
times PyTorch's own call and each algorithm cuBLASLt's heuristic offers at a shape's first call
(``custom_kernels/gemm_tuning.py``) and runs the fastest from then on; its backward pass is made of
``tuned_mm`` calls too. It is a custom operator (``torch.library``): opaque to the compiler, recorded
in CUDA graphs like any kernel; on the CPU it is PyTorch's product.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from custom_kernels.autocast import linear_dtype
from custom_kernels.cublaslt import EPILOGUE_BIAS, EPILOGUE_DEFAULT, algorithm_count, gemm_with_epilogue
from custom_kernels.gemm_tuning import fastest


def _column_major(t: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(a contiguous tensor, whether it is transposed) that holds the row-major matrix ``t``."""
    if t.is_contiguous():
        return t, False
    if t.t().is_contiguous():
        return t.t(), True
    return t.contiguous(), False


def _torch_product(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return a @ b if bias is None else torch.addmm(bias, a, b)


@torch.library.custom_op("trainperf::tuned_mm", mutates_args=())
def tuned_mm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` (plus ``bias`` on every row) for 2-D tensors of one dtype, each contiguous or the
    transpose of a contiguous tensor: on CUDA the fastest of PyTorch's call and cuBLASLt's algorithms
    for this shape and layout, timed at its first call."""
    if a.device.type != "cuda":
        return _torch_product(a, b, bias)
    (p, transpose_p), (q, transpose_q) = _column_major(b), _column_major(a)
    bias_used = None if bias is None else bias.contiguous()
    transpose = (transpose_p, transpose_q)
    epilogue = EPILOGUE_DEFAULT if bias is None else EPILOGUE_BIAS
    aligned = bias_used is None or bias_used.data_ptr() % 256 == 0  # as cuBLASLt's epilogue needs
    key = ("mm", a.device.index, a.dtype, tuple(a.shape), b.shape[1], transpose, epilogue, aligned)

    def run(way: str | int) -> torch.Tensor:
        if way == "torch":
            return _torch_product(a, b, bias)
        return gemm_with_epilogue(p, q, transpose, epilogue, bias_used, algorithm=int(way))

    ways: list[str | int] = ["torch"]
    if aligned:
        ways += range(algorithm_count(p, q, transpose, epilogue))
    return run(fastest(key, ways, run))


@tuned_mm.register_fake
def _(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    return a.new_empty(a.shape[0], b.shape[1])


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    a, b, bias = inputs
    ctx.save_for_backward(a, b)
    ctx.has_bias = bias is not None


def _backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    a, b = ctx.saved_tensors
    grad_a = tuned_mm(grad, b.t()) if ctx.needs_input_grad[0] else None
    grad_b = None
    if ctx.needs_input_grad[1]:  # a weight's transpose gets its gradient in the weight's own layout
        transposed = b.t().is_contiguous() and not b.is_contiguous()
        grad_b = tuned_mm(grad.t(), a).t() if transposed else tuned_mm(a.t(), grad)
    grad_bias = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return grad_a, grad_b, grad_bias


tuned_mm.register_autograd(_backward, setup_context=_setup_context)


class TunedLinear(nn.Linear):
    """``nn.Linear`` (same parameters, under autocast as it is) whose three GEMMs are ``tuned_mm``'s."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # explicit casts and a custom operator, which autocast passes by: no autocast region to enter,
        # which would keep the AOTAutograd cache from storing a compiled graph that holds this layer
        dtype = linear_dtype(x)
        inputs = x.reshape(-1, x.shape[-1]).to(dtype)
        bias = None if self.bias is None else self.bias.to(dtype)
        out = tuned_mm(inputs, self.weight.to(dtype).t(), bias)
        return out.view(*x.shape[:-1], -1)  # type: ignore[no-any-return]
