"""torch.profiler backend: needs no Nsight. The Top-5 comes from the marked iteration of a trace
(``trace.json``, opens in Perfetto): the one the test process wrote while it counted the case's work,
after its timed iterations (``measure.work``), else one a child process writes. On a CPU run the
innermost operators stand in for kernels."""

from __future__ import annotations

from pathlib import Path

from trainperf.profile import backend, launches
from trainperf.profile.backend import Profile
from trainperf.profile.child import TRACE
from trainperf.profile.job import Job, ProfileError, child_argv, require_child_ran, run_logged


class TorchProfiler:
    name = "torch"
    reads_trace = True

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version}"

    def profile(self, job: Job) -> Profile:
        if job.trace is not None:  # no process to start: the counted iterations were profiled already
            return _from_trace(job.trace, f"{self.tool} (test process)", job)
        run_logged(child_argv(job, torch_trace=True), job, "torch.log")
        require_child_ran(job)
        return _from_trace(job.out_dir / TRACE, self.tool, job)


def _from_trace(trace: Path, tool: str, job: Job) -> Profile:
    try:
        capture = launches.read_torch_trace(trace)
    except launches.ProfileFormatError as error:
        raise ProfileError(str(error)) from None
    return backend.from_capture(capture, tool, job, [trace])
