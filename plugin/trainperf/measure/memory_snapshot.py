"""One more iteration of a case recorded with PyTorch's memory history, after its timed iterations (so
the recording never touches timing): the snapshot, which opens in pytorch.org/memory_viz, the trace
index at which each phase began, and the chart and peaks of ``report.memory_timeline``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from trainperf.measure import memory_timeline
from trainperf.measure.errors import first_line
from trainperf.measure.measurement import Measurement
from trainperf.measure.phases import PhaseMarker
from trainperf.measure.runner import Prepared, run_case
from trainperf.measure.timing import synchronize
from trainperf.spec.case import CaseSpec, case_folder

MAX_ENTRIES = 500_000  # allocation events kept: far more than one iteration of the suite's cases makes


def run_recording(
    spec: CaseSpec, report: Path | None, note: Callable[[str], None], trace: Path | None = None
) -> Measurement:
    """The case run as ever (``trace`` as in ``run_case``), then one more iteration recorded into
    ``report``/memory/CASE; where that cannot be (not CUDA, no report folder) or fails, the case's figures
    stand and ``note`` says why."""
    if spec.device.type != "cuda" or report is None:
        where = f"this run is on {spec.device.type}" if spec.device.type != "cuda" else "no --perf-report is given"
        note(f"--perf-memory-snapshot: no snapshots: PyTorch records memory history on CUDA only, kept under "
             f"--perf-report; {where}")  # fmt: skip
        return run_case(spec, trace=trace)
    folder = case_folder(report / "memory", spec.key)
    kept: dict[str, Any] = {}

    def record(case: Prepared) -> None:
        try:
            kept.update(record_iteration(case, folder))
        except (RuntimeError, OSError, KeyError) as error:
            note(f"{spec.key}: no memory snapshot: {type(error).__name__}: {first_line(error, 300)}")

    measurement = run_case(spec, then=record, trace=trace)
    if kept:
        measurement.memory_snapshot = kept
        note(_memory_line(spec.key, kept))
    return measurement


def record_iteration(case: Prepared, folder: Path) -> dict[str, Any]:
    """Record one iteration of ``case`` into ``folder``; what the run document keeps of it."""
    device = next(case.model.parameters()).device
    marks: list[tuple[str, int]] = []
    folder.mkdir(parents=True, exist_ok=True)
    torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES)
    original = case.phases.marker
    try:
        case.phases.marker = _marking(original, marks, device)
        marks.append(("data", _trace_length(device)))
        batch = case.fetch()[0]
        case.step(batch)
        synchronize(device)
        snapshot = folder / memory_timeline.SNAPSHOT
        torch.cuda.memory._dump_snapshot(str(snapshot))
    finally:
        case.phases.marker = original
        torch.cuda.memory._record_memory_history(enabled=None)
    (folder / memory_timeline.MARKS).write_text(json.dumps(marks), encoding="utf-8")
    return memory_timeline.summarize(folder, device.index or 0)


def _marking(original: PhaseMarker, marks: list[tuple[str, int]], device: torch.device) -> PhaseMarker:
    """The case's phase marker, noting where in the allocation trace each phase begins."""

    @contextlib.contextmanager
    def marker(name: str) -> Iterator[None]:
        marks.append((name, _trace_length(device)))
        with original(name):
            yield

    return marker


def _trace_length(device: torch.device) -> int:
    traces = torch.cuda.memory._snapshot(device)["device_traces"]
    return len(traces[device.index or 0]) if traces else 0


def _memory_line(case: str, memory: dict[str, Any]) -> str:
    """'gpt2/x: memory snapshot DIR/memory-snapshot.pickle (pytorch.org/memory_viz); peak MiB by phase: ...'"""
    peaks = ", ".join(f"{phase} {mib:,.0f}" for phase, mib in memory["phase_peak_mib"].items())
    return f"{case}: memory snapshot {memory['snapshot']} (pytorch.org/memory_viz); peak MiB by phase: {peaks}"
