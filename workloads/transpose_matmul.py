"""Custom CUDA kernels as cases: the transposes and matrix multiplies of ``custom_kernels/tiled_cuda.py``, each
against PyTorch's own.

The build (tens of seconds, cached on disk by PyTorch) happens while the case is
built, outside its timed iterations. Every case checks its output against PyTorch's on fresh random
inputs, never zeros. An iteration is one kernel launch; throughput is bytes moved (transpose) or FLOPs
(matmul) per second.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from trainperf import FULL, TINY, Batch, Metric, Optimization, Training, merge_options

from custom_kernels import tiled_cuda


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
    """The case's kernel, its nvcc build done here: in the case's build phase, not its first evaluation."""
    name = merge_options({"kernel": "naive"}, optimization.options, optimization.name)["kernel"]
    if name not in tiled_cuda.BUILT_IN:
        tiled_cuda.extension()
    return table[name]


class Transpose:
    """out = in.T for a float32 matrix (the seed's 8192 x 4096); metric: the largest error, which must be 0."""

    name = "transpose"
    metric = Metric("max_abs_error", higher_is_better=False, default_tolerance=0.0, floor=0.0)

    def iterations(self, size: str) -> tuple[int, int]:
        return TRANSPOSE_SHAPES[size].warmup, TRANSPOSE_SHAPES[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        shape, run = TRANSPOSE_SHAPES[size], _kernel(tiled_cuda.TRANSPOSES, optimization)

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
        shape, run = MATMUL_SHAPES[size], _kernel(tiled_cuda.MATMULS, optimization)

        def evaluate(_: Any) -> float:
            a = _inputs((shape.rows, shape.inner), device, seed=1)
            b = _inputs((shape.inner, shape.cols), device, seed=2)
            exact = a.double() @ b.double()
            return float((run(a, b).double() - exact).abs().max() / exact.abs().max())

        flops = 2 * shape.rows * shape.cols * shape.inner
        a = _inputs((shape.rows, shape.inner), device, seed=3)
        b = _inputs((shape.inner, shape.cols), device, seed=4)
        return _training(run, (a, b), evaluate, flops, "FLOP", float(flops))
