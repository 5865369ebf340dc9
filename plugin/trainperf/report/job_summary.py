"""A run as a GitHub Actions job summary (``$GITHUB_STEP_SUMMARY``): the verdicts, the cases table,
every failure with its message, the failing cases' bottleneck and Top-5, the cases that did not
finish, and the run's notes on the GPU's clocks; cut to GitHub's size limit with a note.

Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from trainperf.judge.checks import CheckName
from trainperf.judge.verdict import Verdict
from trainperf.record.document import RunDocument, cases_frame
from trainperf.report.escape import markdown_text
from trainperf.report.lines import culprit_line
from trainperf.report.tables import display_cases, markdown_table

LIMIT_BYTES = 1024 * 1024  # GitHub's limit on one step's summary
CLOCK_WORDS = ("clock", "throttl", "power cap", "thermal")


def render(run: RunDocument, limit: int = LIMIT_BYTES) -> str:
    """The summary's Markdown, at most ``limit`` bytes (UTF-8)."""
    cases = run.cases
    lines = [f"## trainperf: {markdown_text(run.machine.get('name', 'unknown device'))}", ""]
    lines += [f"> **versions**: {markdown_text(changed)}" for changed in run.version_changes]
    lines += ["", _counts(run), ""] if run.version_changes else [_counts(run), ""]
    if cases:
        lines += [markdown_table(display_cases(cases_frame(cases))), ""]
    if run.culprits:
        lines += [
            "### Culprits (trainperf bisect)",
            "",
            *(f"- {markdown_text(culprit_line(c))}" for c in run.culprits),
            "",
        ]
    failing = [case for case in cases if Verdict.read(case["extra_info"]["verdict"]) == Verdict.FAIL]
    for case in failing:
        lines += _failure(case)
    if run.unfinished:
        lines += ["### Cases that did not finish", ""]
        lines += [f"- **{markdown_text(c['name'])}** ({markdown_text(c['verdict'])}): {markdown_text(c['reason'])}"
                  for c in run.unfinished]  # fmt: skip
        lines.append("")
    throttled = [check["message"] for case in cases for check in case["extra_info"].get("checks", [])
                 if check["name"] == CheckName.CLOCKS]  # fmt: skip
    worded = [note for note in run.data.get("notes", []) if any(w in note.lower() for w in CLOCK_WORDS)]
    clock_notes = list(dict.fromkeys([*throttled, *worded]))
    if clock_notes:
        lines += ["### The GPU's clocks", "", *(f"- {markdown_text(note)}" for note in clock_notes), ""]
    return _cut("\n".join(lines), limit)


def _counts(run: RunDocument) -> str:
    verdicts = Counter(case["extra_info"]["verdict"] for case in run.cases)
    verdicts.update(case["verdict"] for case in run.unfinished)
    counts = [f"**{count} {markdown_text(verdict)}**" for verdict, count in sorted(verdicts.items())]
    return ", ".join(counts) or "no cases"


def _failure(case: Mapping[str, Any]) -> list[str]:
    info = case["extra_info"]
    lines = [f"### {markdown_text(case['name'])}: {Verdict.FAIL}", ""]
    failed = [check for check in info.get("checks", []) if check.get("passed") is False]
    lines += [f"- {markdown_text(check['message'])}" for check in failed]
    profile = info.get("profile") or {}
    bottleneck = profile.get("bottleneck")
    if bottleneck:
        lines += ["", f"{markdown_text(bottleneck['verdict'])}: {markdown_text(bottleneck['reason'])}"]
    top = profile.get("top") or []
    if top:
        lines += ["", _top_table(top)]
    return [*lines, ""]


def _top_table(rows: Sequence[Mapping[str, Any]]) -> str:
    frame = pd.DataFrame(
        {
            "#": range(1, len(rows) + 1),
            "kernel": [row.get("short") for row in rows],
            "phase": [row.get("phase") for row in rows],
            "calls": [row.get("calls") for row in rows],
            "ms": [f"{row['total_ms']:.3f}" if row.get("total_ms") is not None else "" for row in rows],
            "share": [f"{row['share']:.0%}" if row.get("share") is not None else "" for row in rows],
            "bound": [row.get("bound") or "" for row in rows],
        }
    )
    return markdown_table(frame)


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, cut at a line with a note saying how much was left out."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note = f"\n\n(cut at {limit:,} bytes, GitHub's limit: {len(data) - limit:,} more bytes are in the run's artifact)\n"
    kept = data[: max(0, limit - len(note.encode("utf-8")))].decode("utf-8", errors="ignore")
    return kept[: kept.rfind("\n") + 1 if "\n" in kept else len(kept)] + note
