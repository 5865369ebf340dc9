"""torch.profiler backends: need no Nsight. The marked iteration's trace (``trace.json``, opens in Perfetto
or chrome://tracing) gives the Top-5 from its kernels (on a CPU run, its innermost operators).
``TorchProfiler`` has a child process write it; ``InProcessTrace`` reads the one the test process wrote."""

from __future__ import annotations

from pathlib import Path

from trainperf.profile import backend, launches
from trainperf.profile.backend import Job, Profile, ProfileError
from trainperf.profile.child import TRACE


class TorchProfiler:
    name = "torch"
    traces_in_test = False

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version}"

    def profile(self, job: Job) -> Profile:
        backend.run_logged(backend.child_argv(job, torch_trace=True), job, "torch.log")
        backend.require_child_ran(job)
        return _from_trace(job.out_dir / TRACE, self.tool, job)


class InProcessTrace:
    """The trace of one more iteration that the test process ran on its warm case after its timed run:
    no process to start, so ``--profile=ncu`` pays for its ncu child only."""

    name = "torch"
    traces_in_test = True

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version} (test process)"

    def profile(self, job: Job) -> Profile:
        trace = job.out_dir / TRACE
        if not trace.is_file():
            raise ProfileError(f"the test process wrote no {TRACE} in {job.out_dir}")
        return _from_trace(trace, self.tool, job)


def _from_trace(trace: Path, tool: str, job: Job) -> Profile:
    try:
        capture = launches.read_torch_trace(trace)
    except launches.ProfileFormatError as error:
        raise ProfileError(str(error)) from None
    return backend.from_capture(capture, tool, job, [trace])
