"""torch.profiler backend: needs no Nsight. The child writes the marked iteration's trace
(``trace.json``, opens in Perfetto or chrome://tracing); its kernels (on a CPU run, its innermost
operators) give the Top-5."""

from __future__ import annotations

from trainperf.profile import backend, kernels
from trainperf.profile.backend import Job, Profile, ProfileError

TRACE = "trace.json"


class TorchProfiler:
    name = "torch"

    def __init__(self, torch_version: str) -> None:
        self.tool = f"torch.profiler {torch_version}"

    def profile(self, job: Job) -> Profile:
        backend.run_logged(backend.child_argv(job, torch_trace=True), job, "torch.log")
        backend.require_child_ran(job)
        trace = job.out_dir / TRACE
        try:
            capture = kernels.read_torch_trace(trace)
        except kernels.ProfileFormatError as error:
            raise ProfileError(str(error)) from None
        return backend.from_capture(capture, self.tool, job, [trace])
