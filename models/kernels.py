"""Custom CUDA kernels as cases: a matrix transpose (naive, shared-memory tiled, tiled and padded against
bank conflicts) and a matrix multiply (naive, shared-memory tiled), each against PyTorch's own.

They are CUDA C++ built at run time with ``torch.utils.cpp_extension.load_inline`` (nvcc): the lesson
of these kernels is the shared-memory tile and its padding, which CUDA C++ states explicitly and Triton
decides for itself. The build (tens of seconds, cached on disk by PyTorch) happens while the case is
built, outside its timed iterations. Every case checks its output against PyTorch's on fresh random
inputs, never zeros. An iteration is one kernel launch; throughput is bytes moved (transpose) or FLOPs
(matmul) per second.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from trainperf.case import Optimization
from trainperf.workload import FULL, TINY, Batch, Metric, Training, merge_options

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


@dataclass(frozen=True)
class Shape:
    rows: int
    cols: int
    inner: int  # matmul only: rows x inner times inner x cols
    warmup: int
    iters: int


TRANSPOSE_SHAPES = {FULL: Shape(8192, 4096, 0, 10, 50), TINY: Shape(256, 128, 0, 2, 10)}
MATMUL_SHAPES = {FULL: Shape(4096, 4096, 4096, 3, 20), TINY: Shape(128, 96, 64, 2, 10)}


def _inputs(shape: tuple[int, ...], device: torch.device, seed: int) -> torch.Tensor:
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, device=device, generator=generator)


def _training(run: Callable[..., torch.Tensor], batch: Batch, evaluate: Callable[[Any], float],
              amount: int, unit: str, flops: float | None) -> Training:  # fmt: skip
    """One launch of ``run(*batch)`` per iteration, on the same inputs (no training: no optimizer)."""
    done = torch.zeros((), device=batch[0].device)  # the iteration's "loss": no extra kernel to time

    def step(inputs: Batch) -> torch.Tensor:
        run(*inputs)
        return done

    return Training(
        model=torch.nn.Identity(),
        optimizer=None,
        batches=itertools.repeat(batch),
        loss=lambda model, inputs: done,
        evaluate=evaluate,
        samples_per_iteration=amount,
        flops_per_iteration=flops,
        sample_unit=unit,
        step=step,
    )


def _kernel(table: dict[str, Any], optimization: Optimization) -> Any:
    return table[merge_options({"kernel": "naive"}, optimization.options, optimization.name)["kernel"]]


class Transpose:
    """out = in.T for a float32 matrix (the seed's 8192 x 4096); metric: the largest error, which must be 0."""

    name = "transpose"
    metric = Metric("max_abs_error", higher_is_better=False, default_tolerance=0.0, floor=0.0)

    def iterations(self, size: str) -> tuple[int, int]:
        return TRANSPOSE_SHAPES[size].warmup, TRANSPOSE_SHAPES[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        shape, run = TRANSPOSE_SHAPES[size], _kernel(TRANSPOSES, optimization)

        def evaluate(_: Any) -> float:
            fresh = _inputs((shape.rows, shape.cols), device, seed=1)
            return float((run(fresh) - fresh.t()).abs().max())

        moved = 2 * shape.rows * shape.cols * 4  # read once, written once
        x = _inputs((shape.rows, shape.cols), device, seed=0)
        return _training(run, (x,), evaluate, moved, "bytes", None)


class Matmul:
    """C = A B in strict float32 (4096^3); metric: the largest error relative to the largest entry of
    a float64 product."""

    name = "matmul"
    metric = Metric("max_rel_error", higher_is_better=False, default_tolerance=1e-4, floor=1e-4)

    def iterations(self, size: str) -> tuple[int, int]:
        return MATMUL_SHAPES[size].warmup, MATMUL_SHAPES[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        shape, run = MATMUL_SHAPES[size], _kernel(MATMULS, optimization)

        def evaluate(_: Any) -> float:
            a = _inputs((shape.rows, shape.inner), device, seed=1)
            b = _inputs((shape.inner, shape.cols), device, seed=2)
            exact = a.double() @ b.double()
            return float((run(a, b).double() - exact).abs().max() / exact.abs().max())

        flops = 2 * shape.rows * shape.cols * shape.inner
        a = _inputs((shape.rows, shape.inner), device, seed=3)
        b = _inputs((shape.inner, shape.cols), device, seed=4)
        return _training(run, (a, b), evaluate, flops, "FLOP", float(flops))
