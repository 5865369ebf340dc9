"""The terminal summary at the end of the session."""

from __future__ import annotations

from typing import Any

from trainperf import baselines
from trainperf.report import profile_summary
from trainperf.report.document import cases_frame
from trainperf.report.tables import display_cases
from trainperf.session import PerfSession


def write_summary(session: PerfSession, terminal: Any) -> None:
    """Write the cases table, baseline changes and notes to pytest's terminal reporter."""
    if not (session.results or session.notes):
        return
    terminal.write_sep("=", f"trainperf: {session.fingerprint.name} ({session.size})")
    if session.results:
        table = display_cases(cases_frame(session.entries))
        if not any(table["MFU"]):
            table = table.drop(columns="MFU")
        terminal.write_line(table.to_string(index=False))
    for result in session.results:
        if result.profile is not None:
            for line in profile_summary.lines(result.key, result.profile):
                terminal.write_line(line)
    if session.changes:
        terminal.write_line(f"baselines written to {session.baseline_file}:")
        for line in baselines.format_changes(session.changes):
            terminal.write_line("  " + line)
    missing = [r.key for r in session.results if r.baseline_median_ms is None]
    if missing and not session.settings.update_baselines:
        terminal.write_line(
            f"note: no stored baseline in {session.baseline_file} for {len(missing)} case(s): "
            f"{', '.join(missing)}; record them with --update-baselines"
        )
    if session.results and session.peak_flops is None:
        terminal.write_line(f"note: no MFU: no peak FLOP/s is known for {session.fingerprint.name}")
    for note in session.notes:
        terminal.write_line("note: " + note)
    _write_skipped(terminal)


def _write_skipped(terminal: Any) -> None:
    """Each skipped test with its one-line reason, unless pytest lists them itself (``-rs``, ``-ra``)."""
    if set(terminal.config.option.reportchars) & {"s", "a", "A"}:
        return
    for report in terminal.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        terminal.write_line(f"skipped: {report.nodeid}: {reason.removeprefix('Skipped: ')}")
