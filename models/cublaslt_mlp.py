"""GPT-2's MLP (up-projection, tanh GELU, down-projection) with GELU and its gradient folded into the
GEMMs' epilogues by cuBLASLt, which PyTorch calls without them.

Compiled, the MLP runs GELU as its own kernel in the forward pass (reading the up-projection's output,
writing GELU's) and GELU's gradient with the bias gradient as kernels of their own in the backward
pass. cuBLASLt's epilogues do this work while each GEMM's tile is still on chip:

- forward, ``GELU_AUX_BIAS``: the up-projection's GEMM adds the bias, writes GELU of the result and, as
  its auxiliary output, the pre-activation that the backward pass needs;
- backward, ``DGELU_BGRAD``: the GEMM that carries the gradient back through the down-projection
  multiplies it by GELU's derivative at the saved pre-activation and sums the bias gradient.

The two GEMMs are custom operators (``torch.library``), opaque to the compiler and recorded in CUDA
graphs like any kernel; on the CPU they run the same arithmetic in PyTorch, so that the autograd
plumbing around them is tested there. cuBLASLt is the library PyTorch itself loaded, called through
``ctypes``; its bias gradient has the GEMM's dtype.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F

from models.transformer import linear_dtype

# cublasLt.h
COMPUTE_32F = 68  # cublasComputeType_t CUBLAS_COMPUTE_32F
SCALE_32F = 0  # cudaDataType CUDA_R_32F
DATA_TYPES = {torch.bfloat16: 14, torch.float16: 2, torch.float32: 0}  # CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F
DESC_TRANSA, DESC_EPILOGUE, DESC_BIAS_POINTER, DESC_AUX_POINTER, DESC_AUX_LD = 3, 7, 8, 11, 12
EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4
EPILOGUE_DGELU_BGRAD = 64 | 128 | 16
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 * 2**20


class _Heuristic(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t."""

    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves_count", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


@functools.cache
def _library() -> tuple[ctypes.CDLL, ctypes.c_void_p]:
    """cuBLASLt as PyTorch loaded it (found in this process's memory map after a first GEMM), and a
    handle."""
    torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")
    maps = Path("/proc/self/maps").read_text().split("\n")
    paths = sorted({line.split()[-1] for line in maps if "libcublasLt.so" in line})
    if not paths:
        raise RuntimeError("cuBLASLt is not loaded in this process: PyTorch's GEMMs did not load libcublasLt.so")
    library = ctypes.CDLL(paths[0])
    handle = ctypes.c_void_p()
    _check(library.cublasLtCreate(ctypes.byref(handle)), "cublasLtCreate")
    return library, handle


def _check(status: int, call: str) -> None:
    if status != 0:
        raise RuntimeError(f"{call} failed with cublasStatus_t {status}")


def _set(library: ctypes.CDLL, desc: ctypes.c_void_p, attribute: int, value: Any) -> None:
    _check(
        library.cublasLtMatmulDescSetAttribute(desc, attribute, ctypes.byref(value), ctypes.sizeof(value)),
        f"cublasLtMatmulDescSetAttribute({attribute})",
    )


def _layout(library: ctypes.CDLL, dtype: torch.dtype, rows: int, columns: int) -> ctypes.c_void_p:
    """A dense column-major rows x columns matrix."""
    layout = ctypes.c_void_p()
    _check(
        library.cublasLtMatrixLayoutCreate(
            ctypes.byref(layout),
            DATA_TYPES[dtype],
            ctypes.c_uint64(rows),
            ctypes.c_uint64(columns),
            ctypes.c_int64(rows),
        ),
        "cublasLtMatrixLayoutCreate",
    )
    return layout


def _gemm_with_epilogue(
    a: torch.Tensor, b: torch.Tensor, transpose_a: bool, epilogue: int, bias: torch.Tensor, aux: torch.Tensor
) -> torch.Tensor:
    """``b @ a.T`` (``transpose_a``) or ``b @ a`` in PyTorch's row-major terms, with ``epilogue``; its
    bias (or bias gradient) vector and auxiliary matrix (of the result's shape) are ``bias`` and
    ``aux``. cuBLAS reads a row-major r x c tensor as a column-major c x r matrix, so this is
    D = op(A) B with A = ``a``, B = ``b`` and D the result, each seen column-major."""
    library, handle = _library()
    a_rows, a_columns = a.shape[1], a.shape[0]  # column-major
    m, k = (a_columns, a_rows) if transpose_a else (a_rows, a_columns)
    n = b.shape[0]
    if b.shape[1] != k or aux.shape != (n, m) or bias.shape != (m,):
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}, aux {tuple(aux.shape)}")
    out = torch.empty(n, m, dtype=b.dtype, device=b.device)
    workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=b.device)
    desc, preference = ctypes.c_void_p(), ctypes.c_void_p()
    _check(library.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, SCALE_32F), "cublasLtMatmulDescCreate")
    layouts = [_layout(library, a.dtype, a_rows, a_columns), _layout(library, b.dtype, k, n)]
    layouts.append(_layout(library, out.dtype, m, n))
    try:
        _set(library, desc, DESC_TRANSA, ctypes.c_int32(1 if transpose_a else 0))
        _set(library, desc, DESC_EPILOGUE, ctypes.c_uint32(epilogue))
        _set(library, desc, DESC_BIAS_POINTER, ctypes.c_void_p(bias.data_ptr()))
        _set(library, desc, DESC_AUX_POINTER, ctypes.c_void_p(aux.data_ptr()))
        _set(library, desc, DESC_AUX_LD, ctypes.c_int64(m))
        _check(library.cublasLtMatmulPreferenceCreate(ctypes.byref(preference)), "cublasLtMatmulPreferenceCreate")
        limit = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(
            library.cublasLtMatmulPreferenceSetAttribute(
                preference, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(limit), ctypes.sizeof(limit)
            ),
            "cublasLtMatmulPreferenceSetAttribute",
        )
        a_layout, b_layout, d_layout = layouts
        found, count = _Heuristic(), ctypes.c_int(0)
        _check(
            library.cublasLtMatmulAlgoGetHeuristic(
                handle,
                desc,
                a_layout,
                b_layout,
                d_layout,
                d_layout,
                preference,
                1,
                ctypes.byref(found),
                ctypes.byref(count),
            ),
            "cublasLtMatmulAlgoGetHeuristic",
        )
        if count.value == 0:
            raise RuntimeError(f"cuBLASLt has no algorithm for epilogue {epilogue} at m={m}, n={n}, k={k}")
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        a_ptr, b_ptr, out_ptr = (ctypes.c_void_p(t.data_ptr()) for t in (a, b, out))
        scratch = (ctypes.c_void_p(workspace.data_ptr()), ctypes.c_size_t(WORKSPACE_BYTES))
        stream = ctypes.c_void_p(torch.cuda.current_stream(b.device).cuda_stream)
        operands = (a_ptr, a_layout, b_ptr, b_layout, ctypes.byref(beta), out_ptr, d_layout, out_ptr, d_layout)
        algo = ctypes.byref(found.algo)
        status = library.cublasLtMatmul(handle, desc, ctypes.byref(alpha), *operands, algo, *scratch, stream)
        _check(status, "cublasLtMatmul")
    finally:
        for layout in layouts:
            library.cublasLtMatrixLayoutDestroy(layout)
        library.cublasLtMatmulDescDestroy(desc)
        if preference.value:
            library.cublasLtMatmulPreferenceDestroy(preference)
    return out


@torch.library.custom_op("trainperf::linear_gelu_saving_input", mutates_args=())
def linear_gelu_saving_input(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``gelu(x @ weight.T + bias)`` with tanh, ``x @ weight.T + bias``) for 2-D contiguous tensors of
    one dtype: on CUDA one GEMM with cuBLASLt's GELU_AUX_BIAS epilogue."""
    if x.device.type != "cuda":
        pre = torch.addmm(bias, x, weight.t())
        return F.gelu(pre, approximate="tanh"), pre
    pre = torch.empty(x.shape[0], weight.shape[0], dtype=x.dtype, device=x.device)
    return _gemm_with_epilogue(weight, x, True, EPILOGUE_GELU_AUX_BIAS, bias, pre), pre


@linear_gelu_saving_input.register_fake
def _(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (x.shape[0], weight.shape[0])
    return x.new_empty(shape), x.new_empty(shape)


@torch.library.custom_op("trainperf::gelu_gradient_through_linear", mutates_args=())
def gelu_gradient_through_linear(
    grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """For ``linear(gelu(pre), weight)`` and its output's gradient ``grad``: (the gradient at ``pre``,
    ``(grad @ weight) * gelu'(pre)``, and its sum over rows, the bias gradient of the layer that
    produced ``pre``), 2-D contiguous tensors of one dtype: on CUDA one GEMM with cuBLASLt's
    DGELU_BGRAD epilogue."""
    if grad.device.type != "cuda":
        grad_pre = torch.ops.aten.gelu_backward(grad @ weight, pre, approximate="tanh")
        return grad_pre, grad_pre.sum(0)
    bias_grad = torch.empty(weight.shape[1], dtype=grad.dtype, device=grad.device)
    return _gemm_with_epilogue(weight, grad, False, EPILOGUE_DGELU_BGRAD, bias_grad, pre), bias_grad


@gelu_gradient_through_linear.register_fake
def _(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return grad.new_empty((grad.shape[0], weight.shape[1])), grad.new_empty((weight.shape[1],))


class _GeluMlp(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, up_w: torch.Tensor, up_b: torch.Tensor, down_w: torch.Tensor, down_b: torch.Tensor
    ) -> torch.Tensor:
        dtype = linear_dtype(x)
        with torch.autocast(x.device.type, enabled=False):
            inputs = x.reshape(-1, x.shape[-1]).to(dtype).contiguous()
            weights = [t.to(dtype).contiguous() for t in (up_w, up_b, down_w, down_b)]
            hidden, pre = linear_gelu_saving_input(inputs, weights[0], weights[1])
            out = torch.addmm(weights[3], hidden, weights[2].t())
        ctx.save_for_backward(inputs, weights[0], weights[2], hidden, pre)
        ctx.dtypes = [t.dtype for t in (x, up_w, up_b, down_w, down_b)]
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        inputs, up_w, down_w, hidden, pre = ctx.saved_tensors
        grad_out = grad.reshape(-1, grad.shape[-1]).to(pre.dtype).contiguous()
        grad_pre, grad_up_b = gelu_gradient_through_linear(grad_out, down_w, pre)
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
    linear layers are, with GELU and its gradient in cuBLASLt's epilogues on CUDA."""
    apply = cast(Callable[..., torch.Tensor], _GeluMlp.apply)
    return apply(x, up_w, up_b, down_w, down_b)
