"""Each case's memory snapshot as the report shows it: the peak MiB of each phase, as the run document
keeps them, and the chart of allocated memory over the iteration, redrawn from the snapshot where it is
found: in the run document's own folder under memory/CASE, as --perf-report leaves it (a report folder
copied off the GPU machine), or where it was recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from trainperf.measure import memory_timeline
from trainperf.report import charts


@dataclass(frozen=True)
class MemoryView:
    case: str
    snapshot: Path | None  # the file to open in pytorch.org/memory_viz; None where it was not found
    chart_png: bytes | None


def memory_table(cases: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per case with a snapshot: its peak MiB in each phase and at the start of the iteration."""
    rows = []
    for case in cases:
        recorded = case["extra_info"].get("memory_snapshot")
        if recorded:
            peaks = {phase: round(mib) for phase, mib in recorded["phase_peak_mib"].items()}
            start = recorded.get("start_mib")
            rows.append({"case": case["name"], "held at start MiB": None if start is None else round(start), **peaks})
    return pd.DataFrame(rows)


def memory_views(cases: Sequence[Mapping[str, Any]]) -> list[MemoryView]:
    """The chart of each case with a snapshot; without its snapshot file, a view with neither."""
    views = []
    for case in cases:
        recorded = case["extra_info"].get("memory_snapshot")
        if recorded:
            folder = snapshot_folder(Path(recorded["snapshot"]), Path(case.get("folder", ".")))
            chart = None if folder is None else _chart(folder, case["name"])
            snapshot = None if folder is None else folder / memory_timeline.SNAPSHOT
            views.append(MemoryView(case["name"], snapshot, chart))
    return views


def snapshot_folder(recorded: Path, document_folder: Path) -> Path | None:
    """The folder holding the snapshot and its phase marks: under the run document's folder (memory/CASE,
    the copy that travelled with it), else where recorded; None where neither has both files."""
    for folder in (document_folder / "memory" / recorded.parent.name, recorded.parent):
        if (folder / memory_timeline.SNAPSHOT).is_file() and (folder / memory_timeline.MARKS).is_file():
            return folder
    return None


def _chart(folder: Path, case: str) -> bytes:
    snapshot, marks = memory_timeline.load(folder)
    frame = memory_timeline.timeline(snapshot, marks, memory_timeline.busiest_device(snapshot))
    return charts.png(memory_timeline.figure(frame, f"{case}: allocated memory over one iteration, by phase"))
