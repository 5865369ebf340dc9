"""GEMMs with cuBLASLt's epilogues, which PyTorch calls without them: GELU in the up-projection's GEMM,
GELU's gradient in the GEMM that carries the gradient back through the down-projection, and a linear
layer's bias gradient in its weight-gradient GEMM.

- ``linear_gelu_saving_input`` (``GELU_AUX_BIAS``): the up-projection's GEMM adds the bias and writes
  GELU of the result and, as its auxiliary output, the pre-activation that the backward pass needs;
  compiled, GELU is a kernel of its own that reads the GEMM's output and writes GELU's.
- ``gelu_grad_through`` (``DGELU``): the GEMM ``grad @ weight`` through the down-projection multiplies
  its result by GELU's derivative at that saved pre-activation, so the gradient at GELU's output never
  goes to memory (``models/epilogue_mlp.py``).
- ``weight_and_bias_grad`` (``BGRADB``): the weight-gradient GEMM ``grad.T @ inputs`` also sums
  ``grad`` over the rows it reads anyway, the bias gradient; compiled, that sum is a kernel of its own
  that reads ``grad`` again. ``linear`` is a linear layer whose backward pass uses it.

All are custom operators (``torch.library``), opaque to the compiler and recorded in CUDA graphs like
any kernel; on the CPU they run the same arithmetic in PyTorch, so that the autograd plumbing around
them is tested there. cuBLASLt is the library PyTorch itself loaded, called through ``ctypes``; the
bias gradient has the GEMM's dtype. Each GEMM's plan (descriptors and the algorithms cuBLASLt's
heuristic offers) is made once per shape; with ``tuned`` an operator runs the fastest of those
algorithms, timed at the shape's first call (``models/gemm_tuning.py``), instead of the first.

cuBLASLt also has ``DGELU_BGRAD`` (the bias gradient in ``DGELU``'s epilogue too). On the H100 every
algorithm it offers ran the GEMM and then a separate epilogue kernel, 0.91 ms in all against 0.30 ms
for ``DGELU`` (``ci/gelu_epilogue.py``): it is not used.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F

from models.gemm_tuning import fastest
from models.transformer import linear_dtype

# cublasLt.h
COMPUTE_32F = 68  # cublasComputeType_t CUBLAS_COMPUTE_32F
SCALE_32F = 0  # cudaDataType CUDA_R_32F
DATA_TYPES = {torch.bfloat16: 14, torch.float16: 2, torch.float32: 0}  # CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE, DESC_BIAS_POINTER, DESC_AUX_POINTER, DESC_AUX_LD = 3, 4, 7, 8, 11, 12
EPILOGUE_DEFAULT = 1
EPILOGUE_BIAS = 4
EPILOGUE_AUX = 128  # the flag of the epilogues that write an auxiliary output
EPILOGUE_GELU_AUX_BIAS = 32 | EPILOGUE_AUX | 4
EPILOGUE_DGELU = 64 | EPILOGUE_AUX  # reads the pre-activation GELU_AUX saved
EPILOGUE_BGRADB = 512
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 * 2**20
ALGORITHMS = 16  # the most algorithms asked of the heuristic per GEMM


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


@dataclass(frozen=True)
class _Plan:
    """A GEMM's cuBLASLt descriptor, its A, B and D layouts, and the algorithms cuBLASLt's heuristic
    offers for it, best guess first."""

    desc: ctypes.c_void_p
    layouts: tuple[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    algorithms: tuple[_Heuristic, ...]


@functools.cache
def _plan(dtype: torch.dtype, m: int, n: int, k: int, transpose: tuple[bool, bool], epilogue: int) -> _Plan:
    """The plan of D (m x n) = op(A) op(B) with ``epilogue``, made once per shape and kept: up to
    ``ALGORITHMS`` algorithms that fit the workspace."""
    library, handle = _library()
    desc, preference = ctypes.c_void_p(), ctypes.c_void_p()
    _check(library.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, SCALE_32F), "cublasLtMatmulDescCreate")
    _set(library, desc, DESC_TRANSA, ctypes.c_int32(int(transpose[0])))
    _set(library, desc, DESC_TRANSB, ctypes.c_int32(int(transpose[1])))
    _set(library, desc, DESC_EPILOGUE, ctypes.c_uint32(epilogue))
    if epilogue & EPILOGUE_AUX:
        _set(library, desc, DESC_AUX_LD, ctypes.c_int64(m))
    a_shape = (k, m) if transpose[0] else (m, k)
    b_shape = (n, k) if transpose[1] else (k, n)
    layouts = (_layout(library, dtype, *a_shape), _layout(library, dtype, *b_shape), _layout(library, dtype, m, n))
    _check(library.cublasLtMatmulPreferenceCreate(ctypes.byref(preference)), "cublasLtMatmulPreferenceCreate")
    try:
        limit = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(
            library.cublasLtMatmulPreferenceSetAttribute(
                preference, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(limit), ctypes.sizeof(limit)
            ),
            "cublasLtMatmulPreferenceSetAttribute",
        )
        found, count = (_Heuristic * ALGORITHMS)(), ctypes.c_int(0)
        a_layout, b_layout, d_layout = layouts
        _check(
            library.cublasLtMatmulAlgoGetHeuristic(
                handle, desc, a_layout, b_layout, d_layout, d_layout, preference, ALGORITHMS, found, ctypes.byref(count)
            ),
            "cublasLtMatmulAlgoGetHeuristic",
        )
    finally:
        library.cublasLtMatmulPreferenceDestroy(preference)
    if count.value == 0:
        raise RuntimeError(f"cuBLASLt has no algorithm for epilogue {epilogue} at m={m}, n={n}, k={k}")
    return _Plan(desc, layouts, tuple(found[: count.value]))


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t``, copied where its data does not start on the 256 bytes cuBLASLt's heuristic assumes."""
    return t if t.data_ptr() % 256 == 0 else t.clone()


def _gemm_with_epilogue(
    a: torch.Tensor,
    b: torch.Tensor,
    transpose: tuple[bool, bool],
    epilogue: int,
    bias: torch.Tensor | None = None,
    aux: torch.Tensor | None = None,
    algorithm: int = 0,
) -> torch.Tensor:
    """D = op(A) op(B) with ``epilogue``, in cuBLAS's column-major terms: a row-major r x c tensor is a
    column-major c x r matrix, so A = ``a``, B = ``b`` and D, the result, are read that way; the
    epilogue's bias (or bias gradient) vector is ``bias``, its auxiliary matrix (D's shape) ``aux``.
    ``algorithm`` picks among the heuristic's offers (0: its first choice)."""
    tensors = [t for t in (a, b, bias, aux) if t is not None]
    if any(not t.is_contiguous() or t.dtype != b.dtype or t.dtype not in DATA_TYPES for t in tensors):
        described = ", ".join(f"{tuple(t.shape)} {t.dtype}{'' if t.is_contiguous() else ' strided'}" for t in tensors)
        raise ValueError(f"cuBLASLt epilogues take contiguous tensors of one dtype of {list(DATA_TYPES)}: {described}")
    a_rows, a_columns = a.shape[1], a.shape[0]
    b_rows, b_columns = b.shape[1], b.shape[0]
    m, k = (a_columns, a_rows) if transpose[0] else (a_rows, a_columns)
    b_k, n = (b_columns, b_rows) if transpose[1] else (b_rows, b_columns)
    if b_k != k or (aux is not None and aux.shape != (n, m)):
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}, transposed {transpose}")
    library, handle = _library()
    plan = _plan(b.dtype, m, n, k, transpose, epilogue)
    if not 0 <= algorithm < len(plan.algorithms):
        raise ValueError(f"algorithm {algorithm} is not one of the {len(plan.algorithms)} cuBLASLt offers")
    a, b = _aligned(a), _aligned(b)
    out = torch.empty(n, m, dtype=b.dtype, device=b.device)
    workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=b.device)
    if any(t is not None and t.data_ptr() % 256 for t in (bias, aux)):
        raise ValueError("the epilogue's bias and auxiliary tensors must start on 256 bytes")
    if bias is not None:
        _set(library, plan.desc, DESC_BIAS_POINTER, ctypes.c_void_p(bias.data_ptr()))
    if aux is not None:
        _set(library, plan.desc, DESC_AUX_POINTER, ctypes.c_void_p(aux.data_ptr()))
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    a_ptr, b_ptr, out_ptr = (ctypes.c_void_p(t.data_ptr()) for t in (a, b, out))
    a_layout, b_layout, d_layout = plan.layouts
    scratch = (ctypes.c_void_p(workspace.data_ptr()), ctypes.c_size_t(WORKSPACE_BYTES))
    stream = ctypes.c_void_p(torch.cuda.current_stream(b.device).cuda_stream)
    operands = (a_ptr, a_layout, b_ptr, b_layout, ctypes.byref(beta), out_ptr, d_layout, out_ptr, d_layout)
    algo = ctypes.byref(plan.algorithms[algorithm].algo)
    status = library.cublasLtMatmul(handle, plan.desc, ctypes.byref(alpha), *operands, algo, *scratch, stream)
    _check(status, "cublasLtMatmul")
    return out


def algorithm_count(a: torch.Tensor, b: torch.Tensor, transpose: tuple[bool, bool], epilogue: int) -> int:
    """How many algorithms cuBLASLt's heuristic offers for ``_gemm_with_epilogue(a, b, transpose,
    epilogue)`` (at most ``ALGORITHMS``)."""
    m = a.shape[0] if transpose[0] else a.shape[1]
    k = a.shape[1] if transpose[0] else a.shape[0]
    n = b.shape[1] if transpose[1] else b.shape[0]
    return len(_plan(b.dtype, m, n, k, transpose, epilogue).algorithms)


@torch.library.custom_op("trainperf::linear_gelu_saving_input", mutates_args=())
def linear_gelu_saving_input(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, tuned: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``gelu(x @ weight.T + bias)`` with tanh, ``x @ weight.T + bias``) for 2-D contiguous tensors of
    one dtype: on CUDA one GEMM with cuBLASLt's GELU_AUX_BIAS epilogue, with ``tuned`` the fastest of
    the algorithms cuBLASLt offers for this shape (timed at its first call, ``models/gemm_tuning.py``)
    rather than its first choice."""
    if x.device.type != "cuda":
        pre = torch.addmm(bias, x, weight.t())
        return F.gelu(pre, approximate="tanh"), pre
    pre = torch.empty(x.shape[0], weight.shape[0], dtype=x.dtype, device=x.device)

    def run(algorithm: int) -> torch.Tensor:
        return _gemm_with_epilogue(weight, x, (True, False), EPILOGUE_GELU_AUX_BIAS, bias, pre, algorithm)

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
        return _gemm_with_epilogue(inputs, grad, transpose, EPILOGUE_BGRADB, bias_grad, algorithm=algorithm), bias_grad

    def separate(algorithm: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        if algorithm is None:
            weight_grad = grad.t() @ inputs
        else:
            weight_grad = _gemm_with_epilogue(inputs, grad, transpose, EPILOGUE_DEFAULT, algorithm=algorithm)
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
        return _gemm_with_epilogue(weight, grad, (False, False), EPILOGUE_DGELU, aux=pre, algorithm=algorithm)

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
