"""``--profile``: the backend chosen once per session (missing tools become one-line notes and a
fallback), then the cases profiled after their timed runs, together (at the session's end, one child for
them all) or one at a time. A failure yields a note, never a verdict."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainperf.child.process import ChildError
from trainperf.measure.marks import TRACE
from trainperf.profile import tools
from trainperf.profile.backend import Backend, Profile
from trainperf.profile.job import Batch, Job, own_seconds
from trainperf.profile.ncu import NcuProfiler
from trainperf.profile.nsys import NsysProfiler
from trainperf.profile.torchprof import TorchProfiler
from trainperf.spec.case import case_folder


@dataclass
class CaseProfile:
    """A case's profile, or why it has none; ``seconds`` is what profiling it cost: its own part of its
    batch's child, and an equal share of the rest (the child's start and exit, reading its reports)."""

    seconds: float
    out_dir: Path
    batch: int = 1  # the cases profiled together with it, itself included
    profile: Profile | None = None
    error: str | None = None
    files: list[Path] = field(default_factory=list)  # added by the report (e.g. the roofline plot)


@dataclass(frozen=True)
class ProfileSetup:
    """The session's profiler: its backend and how it starts each case's child process."""

    backend: Backend
    root: Path  # each case's profile folder goes under it
    rootdir: Path  # the child's pytest runs here
    child_args: tuple[str, ...]  # what the child's pytest needs: rootdir, ini file, device
    timeout_s: float

    def job(self, nodeid: str, case_key: str, data_wait: float | None, timed_ms: float) -> Job:
        folder, trace = self.folder(case_key), self.trace(case_key)
        found = trace if trace.is_file() else None
        return Job(nodeid, self.rootdir, folder, self.timeout_s, data_wait, self.child_args, timed_ms, found)

    def folder(self, case_key: str) -> Path:
        return case_folder(self.root, case_key)

    def trace(self, case_key: str) -> Path:
        """Where the test process leaves the trace of a case's counted iterations, whose marked one gives
        its Top-5."""
        return self.folder(case_key) / TRACE


def selected(selection: str, case_key: str, failed: bool) -> bool:
    """Whether ``--profile-cases`` asks for this case: ``all``, ``failed`` (a case that failed a check:
    a night explains its regressions, not every case), or comma-separated parts of case names."""
    if selection == "all":
        return True
    if selection == "failed":
        return failed
    return any(part in case_key for part in selection.split(","))


def choose_backend(
    requested: str,
    device_type: str,
    environ: Mapping[str, str],
    torch_version: str,
    note: Callable[[str], None],
    timeout_s: float = tools.PROBE_TIMEOUT_S,
) -> Backend:
    """The backend for ``--profile=requested``; on a CPU run, or without nsys, torch.profiler with a note;
    without ncu, the Top-5 of nsys (or torch.profiler) without a roofline. A tool's ``--version`` probe
    has ``timeout_s`` (the profile timeout) to answer."""
    torch_backend = TorchProfiler(torch_version)
    if requested == "torch":
        return torch_backend
    if device_type != "cuda":
        note(f"--profile={requested} profiles CUDA kernels; this run is on {device_type}: torch.profiler used instead")
        return torch_backend
    if requested == "ncu":
        try:
            ncu = tools.find("ncu", environ, timeout_s)
        except tools.ToolError as error:
            note(f"{error}: no roofline, Top-5 only")
        else:
            note(f"profiler: {ncu.describe()}")
            return NcuProfiler(ncu, torch_backend)
    try:
        nsys = tools.find("nsys", environ, timeout_s)
    except tools.ToolError as error:
        note(f"{error}: torch.profiler finds the Top-5 instead")
        return torch_backend
    note(f"profiler: {nsys.describe()}")
    return NsysProfiler(nsys)


def profile_cases(backend: Backend, jobs: Sequence[Job]) -> list[CaseProfile]:
    """Run the backend on the jobs at once; each error becomes that case's profile note. Each case is
    given its own part of the child's time and an equal share of the rest, so the costly case shows."""
    started, since = time.perf_counter(), time.time()
    try:
        found = backend.profile(Batch(tuple(jobs)))
    except Exception as error:  # a profiler's surprise must not fail a case: it becomes its note
        where = jobs[0].out_dir.parent if len(jobs) > 1 else jobs[0].out_dir
        found = [ChildError(f"{type(error).__name__}: {error} (files in {where})")] * len(jobs)
    own = [own_seconds(job, since) for job in jobs]
    share = max(time.perf_counter() - started - sum(own), 0.0) / len(jobs)
    return [
        CaseProfile(mine + share, job.out_dir, batch=len(jobs), error=f"{backend.name}: {one}")
        if isinstance(one, ChildError)
        else CaseProfile(mine + share, job.out_dir, profile=one, batch=len(jobs))
        for job, one, mine in zip(jobs, found, own, strict=True)
    ]
