"""Custom CUDA kernels as optimizations of one operation each: the transpose moving up the memory roof
(naive -> shared-memory tiled -> tiled and padded), the tiled matmul placed against cuBLAS."""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.transpose_matmul import Matmul, Transpose

NVCC = "CUDA C++ kernels built with nvcc at run time"

naive_transpose = Optimization(REFERENCE, options={"kernel": "naive"}, needs_cuda=NVCC)
TRANSPOSES = Ladder(
    Transpose(),
    [
        naive_transpose,
        naive_transpose.but("smem_tiled", options={"kernel": "smem_tiled"}, needs_cuda=NVCC),
        naive_transpose.but(
            "smem_tiled_padded", options={"kernel": "smem_tiled_padded"}, needs_cuda=NVCC, min_speedup={"cuda": 4.0}
        ),
        naive_transpose.but("torch", options={"kernel": "torch"}, needs_cuda=NVCC),  # PyTorch's copy kernel
    ],
)

naive_matmul = Optimization(REFERENCE, options={"kernel": "naive"}, needs_cuda=NVCC)
MATMULS = Ladder(
    Matmul(),
    [
        naive_matmul,
        naive_matmul.but("smem_tiled", options={"kernel": "smem_tiled"}, needs_cuda=NVCC),
        naive_matmul.but("cublas", options={"kernel": "cublas"}, needs_cuda=NVCC),  # the roof to compare with
    ],
)
