"""torch.profiler backend: needs no Nsight. A child process writes the marked iteration's trace
(``trace.json``, opens in Perfetto or chrome://tracing), whose kernels give the Top-5 (on a CPU run, its
innermost operators). No profiler ever runs in the test process, where the cases are timed."""

from __future__ import annotations

from pathlib import Path

from trainperf.profile import backend, launches
from trainperf.profile.backend import Profile
from trainperf.profile.child import TRACE
from trainperf.profile.job import Job, ProfileError, child_argv, require_child_ran, run_logged


class TorchProfiler:
    name = "torch"

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version}"

    def profile(self, job: Job) -> Profile:
        run_logged(child_argv(job, torch_trace=True), job, "torch.log")
        require_child_ran(job)
        return _from_trace(job.out_dir / TRACE, self.tool, job)


def _from_trace(trace: Path, tool: str, job: Job) -> Profile:
    try:
        capture = launches.read_torch_trace(trace)
    except launches.ProfileFormatError as error:
        raise ProfileError(str(error)) from None
    return backend.from_capture(capture, tool, job, [trace])
