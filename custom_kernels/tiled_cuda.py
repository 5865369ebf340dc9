"""Tiled CUDA C++ kernels: a matrix transpose (naive, shared-memory tiled, tiled and padded against bank
conflicts) and a matrix multiply (naive, shared-memory tiled), built at run time with
``torch.utils.cpp_extension.load_inline`` (nvcc). CUDA C++ states the shared-memory tile and its padding
explicitly, which is the lesson of these kernels; Triton would decide them itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int TILE = 32;  // a tile is TILE x TILE elements
constexpr int ROWS = 8;   // a block is TILE x ROWS threads: each moves TILE / ROWS elements

// Reads a row of the input per warp (coalesced), writes a column of the output (a stride of `rows`).
__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  int col = blockIdx.x * TILE + threadIdx.x, row = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (col < cols && row + j < rows)
      out[(size_t)col * rows + row + j] = in[(size_t)(row + j) * cols + col];
}

// Reads a tile's rows into shared memory, writes the output's rows from the tile's columns: both global
// accesses coalesced. Without padding (PAD 0) a warp reading a tile column hits one bank 32 times.
template <int PAD>
__global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + PAD];
  int col = blockIdx.x * TILE + threadIdx.x, row = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (col < cols && row + j < rows)
      tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(row + j) * cols + col];
  __syncthreads();
  col = blockIdx.y * TILE + threadIdx.x;  // the output's column: an input row
  row = blockIdx.x * TILE + threadIdx.y;  // the output's row: an input column
  for (int j = 0; j < TILE; j += ROWS)
    if (col < rows && row + j < cols)
      out[(size_t)(row + j) * rows + col] = tile[threadIdx.x][threadIdx.y + j];
}

// One thread per output element, reading its row of A and column of B from global memory.
__global__ void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k) {
  int col = blockIdx.x * TILE + threadIdx.x, row = blockIdx.y * TILE + threadIdx.y;
  if (row >= m || col >= n) return;
  float sum = 0.f;
  for (int i = 0; i < k; ++i) sum += a[(size_t)row * k + i] * b[(size_t)i * n + col];
  c[(size_t)row * n + col] = sum;
}

// A TILE x TILE block of C from TILE-wide slabs of A and B staged in shared memory.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * TILE + tx, row = blockIdx.y * TILE + ty;
  float sum = 0.f;
  for (int t = 0; t < k; t += TILE) {
    as[ty][tx] = (row < m && t + tx < k) ? a[(size_t)row * k + t + tx] : 0.f;
    bs[ty][tx] = (t + ty < k && col < n) ? b[(size_t)(t + ty) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) sum += as[ty][i] * bs[i][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = sum;
}

static void check(const torch::Tensor& t) {
  TORCH_CHECK(t.is_cuda() && t.dim() == 2 && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
              "expected a contiguous 2-D float32 CUDA tensor");
}

torch::Tensor transpose(torch::Tensor in, int64_t kind) {
  check(in);
  int rows = in.size(0), cols = in.size(1);
  auto out = torch::empty({cols, rows}, in.options());
  dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
  auto stream = at::cuda::getCurrentCUDAStream();
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  if (kind == 0) transpose_naive<<<grid, block, 0, stream>>>(src, dst, rows, cols);
  else if (kind == 1) transpose_tiled<0><<<grid, block, 0, stream>>>(src, dst, rows, cols);
  else transpose_tiled<1><<<grid, block, 0, stream>>>(src, dst, rows, cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

torch::Tensor matmul(torch::Tensor a, torch::Tensor b, int64_t kind) {
  check(a);
  check(b);
  TORCH_CHECK(a.size(1) == b.size(0), "inner dimensions differ");
  int m = a.size(0), k = a.size(1), n = b.size(1);
  auto c = torch::empty({m, n}, a.options());
  dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  auto stream = at::cuda::getCurrentCUDAStream();
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  if (kind == 0) matmul_naive<<<grid, block, 0, stream>>>(pa, pb, pc, m, n, k);
  else matmul_tiled<<<grid, block, 0, stream>>>(pa, pb, pc, m, n, k);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return c;
}
"""

DECLARATIONS = """
torch::Tensor transpose(torch::Tensor in, int64_t kind);
torch::Tensor matmul(torch::Tensor a, torch::Tensor b, int64_t kind);
"""


@functools.cache
def extension() -> Any:
    """The kernels, compiled by nvcc on first use in a process (PyTorch caches the build on disk)."""
    from torch.utils.cpp_extension import load_inline

    return load_inline(
        name="trainperf_kernels",
        cpp_sources=DECLARATIONS,
        cuda_sources=CUDA_SOURCE,
        functions=["transpose", "matmul"],
        extra_cuda_cflags=["-O3"],
    )


TRANSPOSES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "naive": lambda x: extension().transpose(x, 0),
    "smem_tiled": lambda x: extension().transpose(x, 1),
    "smem_tiled_padded": lambda x: extension().transpose(x, 2),
    "torch": lambda x: x.t().contiguous(),
}
MATMULS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "naive": lambda a, b: extension().matmul(a, b, 0),
    "smem_tiled": lambda a, b: extension().matmul(a, b, 1),
    "cublas": torch.mm,
}
BUILT_IN = frozenset({"torch", "cublas"})  # the kernels above that need no build
