"""torch.profiler backend: needs no Nsight. The Top-5 comes from the marked iteration of a trace
(``trace.json``, opens in Perfetto): the one the test process wrote while it counted the case's work,
after its timed iterations (``measure.work``), else the one a child writes (one child for all such
cases). On a CPU run the innermost operators stand in for kernels."""

from __future__ import annotations

from pathlib import Path

from trainperf.child.process import ChildError
from trainperf.measure import torch_trace
from trainperf.measure.marks import TRACE
from trainperf.profile import backend
from trainperf.profile.backend import Profile
from trainperf.profile.job import Batch, Job, require_child_ran

LOG = "torch.log"


class TorchProfiler:
    name = "torch"
    reads_trace = True

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version}"

    def profile(self, batch: Batch) -> list[Profile | ChildError]:
        """From the test process's trace where it left one (no process to start); the other cases' traces
        from one child that runs them all."""
        untraced = Batch(tuple(job for job in batch.jobs if job.trace is None))
        if not untraced.jobs:
            return [self._one(job, None, None) for job in batch.jobs]
        untraced.forget_earlier(*(job.out_dir / TRACE for job in untraced.jobs))
        failed = None
        try:
            untraced.run(untraced.argv(torch_trace=True), LOG, check=False)
        except ChildError as error:
            failed = error
        return [self._one(job, failed, untraced.out_dir / LOG) for job in batch.jobs]

    def _one(self, job: Job, failed: ChildError | None, log: Path | None) -> Profile | ChildError:
        try:
            if job.trace is not None:
                return _from_trace(job.trace, f"{self.tool} (test process)", job)
            if failed is not None:
                return failed
            require_child_ran(job, log)
            return _from_trace(job.out_dir / TRACE, self.tool, job)
        except ChildError as error:
            return error


def _from_trace(trace: Path, tool: str, job: Job) -> Profile:
    try:
        capture = torch_trace.read_torch_trace(trace)
    except torch_trace.ProfileFormatError as error:
        raise ChildError(str(error)) from None
    return backend.from_capture(capture, tool, job, [trace])
