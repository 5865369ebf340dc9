"""The terminal summary at the end of the session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainperf.judge.checks import CALIBRATION_RUNS
from trainperf.profile.profiler import CaseProfile
from trainperf.record import profile_summary
from trainperf.record.document import cases_frame
from trainperf.record.result import CaseResult
from trainperf.record.session import PerfSession
from trainperf.report.lines import profile_heading
from trainperf.report.tables import LEGEND, display_cases, top_table
from trainperf.store import baselines

FEW = 3  # cases a note names before it counts the rest


def cases_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """The cases table as the summary prints it, then a legend of the short headers it shows."""
    table = display_cases(cases_frame(entries))
    legend = [f"{column}: {text}" for column, text in LEGEND.items() if column in table]
    return "\n".join([str(table.to_string(index=False)), *(f"  {line}" for line in legend)])


def few(keys: Sequence[str]) -> str:
    """'a, b, c' or 'a, b, c and 4 more': a note that names cases stays one short line."""
    shown = ", ".join(keys[:FEW])
    return shown if len(keys) <= FEW else f"{shown} and {len(keys) - FEW} more"


def write_summary(session: PerfSession, terminal: Any) -> None:
    """Write the cases table, baseline changes and notes to pytest's terminal reporter."""
    if not (session.results or session.notes or session.unfinished):
        return
    terminal.write_sep("=", f"trainperf: {session.fingerprint.name} ({session.size})")
    for changed in session.version_lines():
        terminal.write_line(f"versions: {changed}")
    if session.results:
        terminal.write_line(cases_text(session.entries))
    for case in session.unfinished:
        terminal.write_line(f"{case['name']}: {case['verdict']}: {case['reason']}")
    for result in session.results:
        if result.profile is not None:
            for line in profile_lines(result.key, result.profile):
                terminal.write_line(line)
    if session.changes:
        terminal.write_line(f"baselines written to {session.baseline_file}:")
        for line in baselines.format_changes(session.changes):
            terminal.write_line("  " + line)
    missing = [r.key for r in session.results if r.baseline_median_ms is None]
    if missing and not session.settings.update_baselines:
        terminal.write_line(
            f"note: no stored baseline in {session.baseline_file} for {len(missing)} case(s): "
            f"{few(missing)}; record them with --update-baselines"
        )
    paced = host_paced_note(session.results)
    if paced:
        terminal.write_line(paced)
    if session.results and session.device.type == "cpu":  # on a GPU the session notes a missing peak itself
        _write_cpu_notes(session, terminal)
    for note in [*(session.details if terminal.config.option.verbose > 0 else []), *session.notes]:
        terminal.write_line("note: " + note)
    _write_skipped(terminal)


def host_paced_note(results: Sequence[CaseResult]) -> str | None:
    """One line naming the cases whose time awaits calibration (``checks.host_paced``); None if none does."""
    paced = [r.key for r in results if any(check.awaits_calibration for check in r.checks)]
    if not paced:
        return None
    return (
        f"note: time not judged for {len(paced)} case(s) whose GPU waited for the host where recorded "
        f"({few(paced)}): a host's pace moves their time beyond the noise of one recording session; their "
        "work, kernel time and host calls are judged; run the recorded code with --perf-calibrate on "
        f"{CALIBRATION_RUNS} machines or nights to judge their time"
    )


def _write_cpu_notes(session: PerfSession, terminal: Any) -> None:
    """What the CPU's figures do not mean: no MFU without a peak, no speedup where the GPU is the target."""
    if session.peak_flops is None:
        terminal.write_line(f"note: no MFU: no peak FLOP/s is known for {session.fingerprint.name}")
    slower = [r.key for r in session.results if r.speedup is not None and r.speedup < 1.0]
    if slower:
        terminal.write_line(
            f"note: {len(slower)} case(s) ran slower than their reference on the CPU ({few(slower)}): "
            "most optimizations target the GPU; a speedup is checked only where a case declares one for the CPU"
        )


def _write_skipped(terminal: Any) -> None:
    """Each skipped test with its one-line reason, unless pytest lists them itself (``-rs``, ``-ra``)."""
    if set(terminal.config.option.reportchars) & {"s", "a", "A"}:
        return
    for report in terminal.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        terminal.write_line(f"skipped: {report.nodeid}: {reason.removeprefix('Skipped: ')}")


def profile_lines(key: str, case: CaseProfile) -> list[str]:
    """A heading, the Top-5 table and the roofline reasons, for the terminal."""
    if case.profile is None:
        return [f"{key}: no profile ({case.error})"]
    entry = profile_summary.record(case)
    heading = f"{key}: {profile_heading(entry)}"
    if entry["bottleneck"] is not None:
        heading += f"\n  {entry['bottleneck']['verdict']}: {entry['bottleneck']['reason']}"
    if entry["caveat"] is not None:
        heading += f"\n  {entry['caveat']}"
    rows = entry["top"]
    table = top_table(rows, entry["unit"], full_names=False)
    reasons = [f"  {rank}. {row['reason']}" for rank, row in enumerate(rows, 1) if row.get("reason")]
    return [heading, *("  " + line for line in table.to_string(index=False).splitlines()), *reasons]
