"""``baseline-changes.md`` under --perf-report after --update-baselines: the old -> new table, ready to be a
pull request's body; its reviewer sees each case's run medians and the slowdown the new entry lets the
gate catch, so that a recording on a busy host, whose noise blinds the gate, is not merged unseen."""

from __future__ import annotations

from pathlib import Path

from trainperf.store.baselines import Change, detects_listed, runs_listed
from trainperf.store.locked_file import atomic_write

FILE = "baseline-changes.md"
THRESHOLD = (
    "*threshold*: the smallest slowdown the gate fails at the entry's measured noise and the default floor "
    "(a case's own `slowdown_floor` raises it)."
)


def changes_markdown(changes: list[Change], baseline_file: Path, device: str) -> str:
    import pandas as pd  # here: every process that measures a case loads this module, few write the table

    table = pd.DataFrame(
        {
            "case": [c.case for c in changes],
            "old median ms": ["new" if c.old_median_ms is None else f"{c.old_median_ms:.3f}" for c in changes],
            "new median ms": ["removed" if c.new_median_ms is None else f"{c.new_median_ms:.3f}" for c in changes],
            "change": ["" if c.delta is None else f"{c.delta:+.1%}" for c in changes],
            "runs ms": [runs_listed(c) for c in changes],
            "threshold": [detects_listed(c) for c in changes],
        }
    )
    return (
        f"Baselines of {device} in `{baseline_file.name}`:\n\n{table.to_markdown(index=False, disable_numparse=True)}\n"
    )


def changes_document(sections: list[str]) -> str:
    """The file's text: each baseline file's table, then what *threshold* means."""
    return "\n".join([*sections, THRESHOLD]) + "\n"


def write_changes(changes: list[Change], baseline_file: Path, device: str, directory: Path) -> Path:
    return atomic_write(directory / FILE, changes_document([changes_markdown(changes, baseline_file, device)]))
