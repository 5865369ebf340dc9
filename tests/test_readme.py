"""The README's examples are what the code prints, so that they cannot drift from it."""

from __future__ import annotations

import json
from pathlib import Path

from trainperf.report.terminal import cases_text

ROOT = Path(__file__).parent.parent
# `pytest examples --update-baselines`, then `pytest examples --perf-report=DIR` on a two-core CPU machine
EXAMPLES_RUN = Path(__file__).parent / "data" / "cpu_examples.run.json"


def fenced_block_after(text: str, heading: str) -> str:
    """The first fenced code block after ``heading``, without its fences."""
    after = text.split(heading, 1)[1]
    opening = after.index("```")
    body_start = after.index("\n", opening) + 1
    return after[body_start : after.index("```", body_start)].rstrip("\n")


def test_the_summary_example_is_what_the_summary_prints_for_that_run() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = cases_text(json.loads(EXAMPLES_RUN.read_text(encoding="utf-8"))["benchmarks"])
    shown = fenced_block_after(readme, "## Reading the summary")
    assert shown == expected, f"README's summary example is stale; the summary prints:\n{expected}"
