"""Custom CUDA kernels as optimizations of one operation each: the transpose moving up the memory roof
(naive -> shared-memory tiled -> tiled and padded), the tiled matmul placed against cuBLAS."""

from __future__ import annotations

import pytest
from trainperf import REFERENCE, Optimization
from trainperf.fixture import TrainPerf

from models.kernels import Matmul, Transpose

NVCC = "CUDA C++ kernels built with nvcc at run time"

naive_transpose = Optimization(REFERENCE, options={"kernel": "naive"}, needs_cuda=NVCC)
TRANSPOSES = [
    naive_transpose,
    naive_transpose.but("smem_tiled", options={"kernel": "smem_tiled"}, needs_cuda=NVCC),
    naive_transpose.but(
        "smem_tiled_padded", options={"kernel": "smem_tiled_padded"}, needs_cuda=NVCC, min_speedup={"cuda": 4.0}
    ),
    naive_transpose.but("torch", options={"kernel": "torch"}, needs_cuda=NVCC),  # PyTorch's copy kernel
]

naive_matmul = Optimization(REFERENCE, options={"kernel": "naive"}, needs_cuda=NVCC)
MATMULS = [
    naive_matmul,
    naive_matmul.but("smem_tiled", options={"kernel": "smem_tiled"}, needs_cuda=NVCC),
    naive_matmul.but("cublas", options={"kernel": "cublas"}, needs_cuda=NVCC),  # the roof to compare with
]


@pytest.mark.parametrize("optimization", TRANSPOSES, ids=lambda o: o.name)
def test_transpose(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(Transpose(), optimization)


@pytest.mark.parametrize("optimization", MATMULS, ids=lambda o: o.name)
def test_matmul(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(Matmul(), optimization)
