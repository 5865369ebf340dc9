"""A timed case re-run under the session's profiler, its Top-5 and roofline attached to its result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from trainperf.profile.profiler import profile_case
from trainperf.profile.roofline import RooflinePoint

if TYPE_CHECKING:
    from trainperf.record.result import CaseResult
    from trainperf.record.session import PerfSession


def attach_profile(session: PerfSession, nodeid: str, result: CaseResult) -> None:
    """Re-run this node under the profiler; attach what it found, or one note why it found nothing."""
    assert session.profiling is not None
    job = session.profiling.job(nodeid, result.key, result.reader_share, result.summary.median)
    backend = session.profiling.backend
    session.progress(f"{result.key}: profiling with {backend.name} (files in {job.out_dir})")
    case = profile_case(backend, job)
    session.progress(f"{result.key}: {backend.name} done in {case.seconds:.0f} s")
    if case.profile is not None and case.profile.roofline:
        case.files.append(_plot(case.profile.roofline, job.out_dir / "roofline.png", result.key, session))
    if case.error is not None:
        session.note(f"{result.key}: profile not attached: {case.error}")
    result.profile = case


def _plot(points: list[RooflinePoint], path: Path, key: str, session: PerfSession) -> Path:
    """The roofline PNG; a plotting failure is a note, the profile stays."""
    from trainperf.report.roofline_plot import plot_roofline

    try:
        return plot_roofline(points, path, f"{key}: roofline of its Top-5 kernels ({session.fingerprint.name})")
    except (OSError, ValueError) as error:
        session.note(f"{key}: roofline plot not written: {error}")
        return path
