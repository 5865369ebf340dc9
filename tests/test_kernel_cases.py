"""A workload whose iteration is a kernel, not a training step, runs through the same runner: PyTorch's
own transpose and matmul on the CPU (the CUDA C++ kernels need nvcc and a GPU: perf_tests/test_kernels.py)."""

from __future__ import annotations

import pytest
import torch
from trainperf import Optimization
from trainperf.measure.runner import run_case
from trainperf.spec.case import CaseSpec
from trainperf.spec.workload import TINY

from workloads.transpose_matmul import Matmul, Transpose

CPU = torch.device("cpu")


def test_a_kernel_case_is_timed_per_launch_and_checked_on_fresh_inputs() -> None:
    measurement = run_case(CaseSpec(Transpose(), Optimization("torch", options={"kernel": "torch"}), CPU, TINY, 2, 5))
    assert len(measurement.samples_ms) == 5 and all(ms > 0 for ms in measurement.samples_ms)
    assert measurement.metric == 0.0 and measurement.initial_metric == 0.0  # a transpose is exact
    assert measurement.sample_unit == "bytes" and measurement.samples_per_iteration == 2 * 256 * 128 * 4
    assert measurement.flops_per_iteration is None and measurement.losses == [0.0] * 7


def test_matmul_error_is_relative_to_a_float64_product() -> None:
    measurement = run_case(CaseSpec(Matmul(), Optimization("cublas", options={"kernel": "cublas"}), CPU, TINY, 1, 3))
    assert 0 < measurement.metric < 1e-5
    assert measurement.flops_per_iteration == 2 * 128 * 96 * 64


def test_an_unknown_kernel_is_named() -> None:
    with pytest.raises(ValueError, match="unknown workload options"):
        run_case(CaseSpec(Transpose(), Optimization("x", options={"kernl": "naive"}), CPU, TINY, 1, 1))


def test_a_custom_kernel_is_built_with_its_case_not_at_its_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = []
    monkeypatch.setattr("custom_kernels.tiled_cuda.extension", lambda: builds.append("nvcc"))
    Transpose().build(CPU, TINY, Optimization("naive", options={"kernel": "naive"}))
    Matmul().build(CPU, TINY, Optimization("cublas", options={"kernel": "cublas"}))
    assert builds == ["nvcc"]  # the naive transpose's extension, built before any launch; cuBLAS needs none
