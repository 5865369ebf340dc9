"""The terminal summary at the end of the session."""

from __future__ import annotations

from typing import Any

from trainperf import baselines
from trainperf.report.table import cases_table
from trainperf.session import PerfSession


def write_summary(session: PerfSession, terminal: Any) -> None:
    """Write the cases table, baseline changes and notes to pytest's terminal reporter."""
    if not (session.results or session.notes):
        return
    terminal.write_sep("=", f"trainperf: {session.fingerprint.name} ({session.size})")
    if session.results:
        terminal.write_line(cases_table(session.results).to_string(index=False))
    if session.changes:
        terminal.write_line(f"baselines written to {session.baseline_file}:")
        for line in baselines.format_changes(session.changes):
            terminal.write_line("  " + line)
    for check in (c for r in session.results for c in r.checks if c.passed is None and c.name == "baseline"):
        terminal.write_line("note: " + check.message)
    for note in session.notes:
        terminal.write_line("note: " + note)
