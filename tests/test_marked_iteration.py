"""The marked iteration a profiler's child runs: traced on a warm case after its measurement, torch.profiler
ranges only inside it, and its trace gives the Top-5."""

from __future__ import annotations

from pathlib import Path

import torch
from trainperf.child.marked_iteration import marked_iteration
from trainperf.measure import torch_trace
from trainperf.measure.runner import Prepared, run_case
from trainperf.profile import launches
from trainperf.profile.backend import from_capture
from trainperf.profile.job import Job
from trainperf.spec.case import CaseSpec
from trainperf.spec.optimization import Optimization

from tests.toy_workload import Toy

CPU = torch.device("cpu")


def test_a_marked_iteration_after_the_measurement_gives_the_top5(tmp_path: Path) -> None:
    seen: list[bool] = []

    def trace(case: Prepared) -> None:
        seen.append(case.phases.for_torch_profiler)
        marked_iteration(case, CPU, tmp_path, torch_profiler=True, cuda_profiler=False)
        seen.append(case.phases.for_torch_profiler)

    measurement = run_case(CaseSpec(Toy(), Optimization("reference"), CPU, "tiny", 2, 5), then=trace)
    assert len(measurement.samples_ms) == 5 and len(measurement.losses) == 7  # the traced step is not counted
    assert seen == [False, False]  # torch.profiler ranges only inside the traced iteration
    capture = torch_trace.read_torch_trace(tmp_path / "trace.json")
    profile = from_capture(capture, "torch.profiler 2.x", Job("node", tmp_path, tmp_path, 1.0), [])
    assert profile.unit == "operator"
    assert len(profile.top) == 5 and set(profile.top["phase"]) <= {"data", "forward", "backward", "optimizer"}
    # the phase ranges were recorded: every phase has its ops (which of them make the Top-5 is timing)
    assert {"data", "forward", "backward", "optimizer"} <= set(launches.iteration_launches(capture)["phase"])
