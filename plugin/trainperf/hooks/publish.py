"""What a run writes: each finished case handed to the store (under --update-baselines) and to the run
document on disk as it finishes; at its end the baselines' changes and history, the run document and the
report; under xdist the controller merges its workers' documents. The session itself does no I/O."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainperf.measure import workers
from trainperf.record.document import case_entry
from trainperf.record.run_file import write_progress, write_run_document
from trainperf.report.baseline_changes import FILE as CHANGES_FILE
from trainperf.report.baseline_changes import changes_document, changes_markdown, write_changes
from trainperf.store import baselines
from trainperf.store.baselines import BaselineError, changes_between, format_changes
from trainperf.store.baselines import load as load_baselines
from trainperf.store.locked_file import atomic_write

if TYPE_CHECKING:
    from trainperf.record.result import CaseEntry, CaseResult
    from trainperf.record.session import PerfSession


def record_case(perf: PerfSession, result: CaseResult) -> CaseEntry:
    """A finished case kept by the session, its baseline merged into this device's file (under
    --update-baselines) and the run document on disk brought up to date."""
    entry = case_entry(result)
    perf.record(result, entry)
    if result.key in perf.pending:
        _write_baseline(perf, result.key)
    save_progress(perf)
    return entry


def save_progress(perf: PerfSession) -> None:
    """The run document as it stands, written after each case with --perf-report: a session killed
    where it cannot write its reports (SIGKILL, the machine taken away) keeps every case it finished.
    Of a launched group's ranks, the one that writes the reports at the end alone writes."""
    if perf.settings.report is None or (perf.launch is not None and not perf.launch.reports):
        return
    write_progress(perf, perf.settings.report, workers.run_file(os.environ))


def _write_baseline(perf: PerfSession, key: str) -> None:
    """Merge one recorded case into this device's file as soon as it finishes, so that a run cut short
    (a CI time limit, a kill) keeps every case it finished. A failed write stops the writes; ``publish``
    reports it at the run's end. An entry the file's schema refuses is that case's note alone."""
    if perf.baseline_error is not None:
        return
    try:
        perf.changes += baselines.update(perf.baseline_file, perf.fingerprint.slug, {key: perf.pending[key]})
    except baselines.InvalidEntry as error:
        perf.note(f"baseline {error}")
    except (baselines.BaselineError, OSError) as error:
        perf.baseline_error = error


def _write_history(perf: PerfSession) -> list[str]:
    """Under --perf-history (--perf-calibrate): the accepted (judged) cases' medians added to their
    baselines' history."""
    if not (perf.keeps_history and perf.accepted and not perf.settings.update_baselines):
        return []
    board = perf.fingerprint.board_part_number
    return baselines.add_history(perf.baseline_file, perf.fingerprint.slug, perf.accepted, perf.accepted_figures, board)


def publish(perf: PerfSession) -> bool:
    """Write the run document and the report, then the baselines (under --update-baselines) and their
    changes, noting where each went. The run's record comes first and stands whatever the baseline write
    meets; a failed write is one note, and False. Of a launched group's ranks, rank 0 alone writes."""
    if perf.launch is not None and not perf.launch.reports:
        perf.note(f"rank {perf.launch.rank} of {perf.launch.world}: rank 0 writes the run document and baselines")
        return True
    report = perf.settings.report
    run_file = None if report is None else report / workers.run_file(os.environ)
    failed = None if perf.baseline_error is None else _not_written(perf, perf.baseline_error, run_file)
    if failed is not None:  # the write that stopped the case-by-case writes: in run.json's notes too
        perf.note(failed)
    if report is not None and (perf.results or perf.unfinished):
        path = write_run_document(perf, report, workers.run_file(os.environ))
        perf.note(f"run document written to {path}")
        if workers.worker_id(os.environ) is None:
            perf.note(write_report(path))
    if failed is not None:
        return False
    try:
        added = _write_history(perf)
    except (BaselineError, OSError) as error:
        perf.note(_not_written(perf, error, None))
        return False
    if added:
        kind = "judged case(s), passed or failed (--perf-calibrate)," if perf.settings.calibrate else "passing case(s)"
        perf.note(f"history: {len(added)} {kind} added to {perf.baseline_file}")
    if perf.changes and report is not None and workers.worker_id(os.environ) is None:  # else: the controller
        path = write_changes(perf.changes, perf.baseline_file, perf.fingerprint.name, report)
        perf.note(f"baseline changes written to {path}")
    return True


def _not_written(perf: PerfSession, error: Exception, run_file: Path | None) -> str:
    """'baselines not written: FILE: why', and where a recording's entries are kept, with the command
    that writes them once the cause is fixed."""
    if isinstance(error, OSError):
        text = f"baselines not written: {error.filename or perf.baseline_file}: {error.strerror or error}"
    else:  # a BaselineError names the file already
        text = f"baselines not written: {error}"
    if run_file is None or not perf.settings.update_baselines:
        return text
    return f"{text}; the recorded cases are kept in {run_file}: trainperf record {run_file} --baseline-dir DIR"


def merge_workers(report: Path) -> list[str]:
    """The controller of xdist workers: their run documents merged into run.json, and the report; the
    lines that tell the terminal what the workers ran."""
    from trainperf.record.document import load, merge

    found = workers.worker_files(report)
    if not found:
        return []
    merged = merge([load(path) for path in found])
    path = report / workers.RUN_FILE
    atomic_write(path, json.dumps(merged, indent=1) + "\n")
    names = ", ".join(p.name for p in found)
    notes = [f"run documents of {len(found)} workers ({names}) merged into {path}", write_report(path)]
    return merged_summary(merged, notes)


def merged_summary(merged: dict[str, Any], notes: Sequence[str] = ()) -> list[str]:
    """The workers' cases table as one session's summary shows it, then every note once."""
    from trainperf.report.terminal import cases_text

    table = cases_text(merged["benchmarks"]).splitlines() if merged["benchmarks"] else []
    return table + ["note: " + note for note in [*merged["notes"], *notes]]


def snapshot_baselines(directory: Path) -> dict[Path, dict[str, dict[str, Any]]]:
    """Every readable baseline file of the folder, as loaded: what an xdist run's update changes."""
    found = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        with contextlib.suppress(BaselineError):
            found[path] = load_baselines(path)
    return found


def merged_changes(before: dict[Path, dict[str, dict[str, Any]]], directory: Path, report: Path | None) -> list[str]:
    """The xdist controller after --update-baselines: every worker's old -> new lines, and one
    baseline-changes.md for them all under --perf-report."""
    lines: list[str] = []
    sections = []
    for path, after in snapshot_baselines(directory).items():
        changes = changes_between(before.get(path, {}), after)
        if changes:
            device = next(iter(after.values()), {}).get("fingerprint", {}).get("name", path.stem)
            lines += [f"baselines written to {path}:", *("  " + line for line in format_changes(changes))]
            sections.append(changes_markdown(changes, path, device))
    if sections and report is not None:
        atomic_write(report / CHANGES_FILE, changes_document(sections))
        lines.append(f"note: baseline changes of every worker written to {report / CHANGES_FILE}")
    return lines


def write_report(run_document: Path) -> str:
    """report.html and report.md beside the run document; says where, or why not (the run stands)."""
    from trainperf.record.document import load
    from trainperf.report.experiment import build_report
    from trainperf.report.pages import write_html, write_markdown

    try:
        report = build_report([load(run_document)])
        html = write_html(report, run_document.parent)
        write_markdown(report, run_document.parent)
    except Exception as error:  # the run's results are written already: the report only adds a view of them
        return f"report not written: {type(error).__name__}: {error}"
    return f"report written to {html} (and report.md); re-render with: trainperf report {run_document} -o DIR"
