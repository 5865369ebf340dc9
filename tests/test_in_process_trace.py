"""``--profile=ncu``'s Top-5 source: one more iteration traced by the test process after its timed run."""

from __future__ import annotations

from pathlib import Path

import torch
from trainperf.case import CaseSpec, Optimization
from trainperf.profile.backend import Job
from trainperf.profile.replay import marked_iteration
from trainperf.profile.torchprof import InProcessTrace
from trainperf.runner import Prepared, run_case

from tests.toy_workload import Toy

CPU = torch.device("cpu")


def test_the_traced_iteration_follows_the_measurement_and_gives_the_top5(tmp_path: Path) -> None:
    seen: list[bool] = []

    def trace(case: Prepared) -> None:
        seen.append(case.phases.for_torch_profiler)
        marked_iteration(case, CPU, tmp_path, torch_profiler=True, cuda_profiler=False)
        seen.append(case.phases.for_torch_profiler)

    measurement = run_case(CaseSpec(Toy(), Optimization("reference"), CPU, "tiny", 2, 5), then=trace)
    assert len(measurement.samples_ms) == 5 and len(measurement.losses) == 7  # the traced step is not counted
    assert seen == [False, False]  # torch.profiler ranges only inside the traced iteration
    profile = InProcessTrace("2.x").profile(Job("node", tmp_path, tmp_path, 1.0))
    assert profile.tool == "torch.profiler 2.x (test process)" and profile.unit == "operator"
    assert len(profile.top) == 5 and set(profile.top["phase"]) <= {"data", "forward", "backward", "optimizer"}
    assert {"forward", "optimizer"} <= set(profile.top["phase"])  # the phase ranges were recorded
    assert not (tmp_path / "child.json").exists()  # no child ran
