"""cuBLASLt, the GEMM library PyTorch itself loaded, called through ``ctypes``: one GEMM with an epilogue
(bias, GELU, GELU's gradient, bias gradient). Each GEMM's plan (descriptors and the algorithms
cuBLASLt's heuristic offers) is made once per shape; ``algorithm`` picks among those offers.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

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


def gemm_with_epilogue(
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
    """How many algorithms cuBLASLt's heuristic offers for ``gemm_with_epilogue(a, b, transpose,
    epilogue)`` (at most ``ALGORITHMS``)."""
    m = a.shape[0] if transpose[0] else a.shape[1]
    k = a.shape[1] if transpose[0] else a.shape[0]
    n = b.shape[1] if transpose[1] else b.shape[0]
    return len(_plan(b.dtype, m, n, k, transpose, epilogue).algorithms)
