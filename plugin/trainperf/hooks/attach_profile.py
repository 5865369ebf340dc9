"""Timed cases re-run under the session's profiler, their Top-5 and roofline attached to their results:
at once (one case), or together at the session's end (``LateConfirmation`` holds their reports)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from trainperf.hooks.publish import save_progress
from trainperf.profile.profiler import profile_cases
from trainperf.profile.roofline import RooflinePoint
from trainperf.record import profile_summary
from trainperf.report import junit

if TYPE_CHECKING:
    from trainperf.record.result import CaseEntry, CaseResult
    from trainperf.record.session import PerfSession


@dataclass(frozen=True)
class ToProfile:
    """A judged case to profile at the session's end: its item, what selects it in a child, its result and
    its run-document entry."""

    nodeid: str
    selector: str
    result: CaseResult
    entry: CaseEntry


def attach_profiles(session: PerfSession, cases: Sequence[tuple[str, CaseResult]]) -> None:
    """Re-run these (node, case) pairs under the profiler, all in one batch; attach what each found, or
    one note why it found nothing."""
    assert session.profiling is not None
    profiling = session.profiling
    jobs = [profiling.job(node, r.key, r.reader_share, r.summary.median) for node, r in cases]
    backend = profiling.backend
    what = cases[0][1].key if len(cases) == 1 else f"{len(cases)} cases together"
    session.progress(f"{what}: profiling with {backend.name} (files in {profiling.root})")
    found = profile_cases(backend, jobs)
    total = sum(case.seconds for case in found)
    session.progress(f"{what}: {backend.name} done in {total:.0f} s")
    for (_, result), job, case in zip(cases, jobs, found, strict=True):
        if case.profile is not None and case.profile.roofline:
            case.files.append(_plot(case.profile.roofline, job.out_dir / "roofline.png", result.key, session))
        if case.error is not None:
            session.note(f"{result.key}: profile not attached: {case.error}")
        result.profile = case


def attach_late(
    session: PerfSession, cases: Sequence[ToProfile], unlogged: Sequence[tuple[pytest.Item, list[pytest.TestReport]]]
) -> None:
    """The held cases profiled in one batch; each one's entry, JUnit properties (its teardown report's) and
    pytest-html row get its profile before its reports are logged."""
    attach_profiles(session, [(case.selector, case.result) for case in cases])
    for case in cases:
        assert case.result.profile is not None
        case.entry["extra_info"]["profile"] = profile_summary.record(case.result.profile)
    save_progress(session)
    html = any(item.config.pluginmanager.hasplugin("html") for item, _ in unlogged)
    for item, reports in unlogged:
        for entry in [case.entry for case in cases if case.nodeid == item.nodeid]:
            found = list(junit.profile_properties(entry["extra_info"]["profile"]).items())
            item.user_properties.extend(found)
            _add_to_reports(reports, found, entry if html else None)


def _add_to_reports(reports: Sequence[Any], properties: list[tuple[str, object]], html_entry: CaseEntry | None) -> None:
    """The teardown report's properties (JUnit reads them there) and, with pytest-html, the call report's
    extras (an attribute pytest-html adds to reports)."""
    for report in reports:
        if report.when == "teardown":
            report.user_properties = [*report.user_properties, *properties]
        if report.when == "call" and html_entry is not None:
            from trainperf.report.html_extras import profile_extras

            report.extras = [*getattr(report, "extras", []), *profile_extras(html_entry)]


def _plot(points: list[RooflinePoint], path: Path, key: str, session: PerfSession) -> Path:
    """The roofline PNG; a plotting failure is a note, the profile stays."""
    from trainperf.report.roofline_plot import plot_roofline

    try:
        return plot_roofline(points, path, f"{key}: roofline of its Top-5 kernels ({session.fingerprint.name})")
    except (OSError, ValueError) as error:
        session.note(f"{key}: roofline plot not written: {error}")
        return path
