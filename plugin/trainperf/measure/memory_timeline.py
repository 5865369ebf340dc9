"""Allocated memory over one recorded iteration, by phase, from PyTorch's memory snapshot.

The snapshot holds the allocator's blocks at the end and every allocation event since recording began;
walking the events back from the end gives the bytes allocated before and after each one. The phase
marks (the trace index at which data, forward, backward and optimizer began) split them. Pure: no
torch, no pytest; the snapshot is a pickle of plain Python values.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

SNAPSHOT = "memory-snapshot.pickle"
MARKS = "memory-phases.json"
CHART = "memory-by-phase.png"
MIB = 2**20
ALLOCATED = {"alloc": 1, "free_completed": -1}  # events that change the bytes handed out to tensors


def load(folder: Path) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    with open(folder / SNAPSHOT, "rb") as handle:
        snapshot = pickle.load(handle)  # written by torch.cuda.memory._dump_snapshot in this run
    marks = [(str(name), int(index)) for name, index in json.loads((folder / MARKS).read_text(encoding="utf-8"))]
    return snapshot, marks


def timeline(snapshot: dict[str, Any], marks: list[tuple[str, int]], device: int) -> pd.DataFrame:
    """One row per allocation event of ``device``: its phase and the MiB allocated after it."""
    kept = [(i, e) for i, e in enumerate(snapshot["device_traces"][device]) if e["action"] in ALLOCATED]
    indices, events = [i for i, _ in kept], [e for _, e in kept]
    allocated = sum(
        block["size"]
        for segment in snapshot["segments"]
        if segment["device"] == device
        for block in segment["blocks"]
        if block["state"] == "active_allocated"
    )
    after = []
    for event in reversed(events):  # from the end state back to the start
        after.append(allocated)
        allocated -= ALLOCATED[event["action"]] * event["size"]
    after.reverse()
    starts = sorted(marks, key=lambda mark: mark[1])
    phases = [next((name for name, start in reversed(starts) if start <= index), starts[0][0]) for index in indices]
    return pd.DataFrame({"event": range(len(events)), "phase": phases, "allocated_mib": [b / MIB for b in after]})


def phase_peaks(frame: pd.DataFrame) -> dict[str, float]:
    """The most MiB allocated in each phase, in the order the phases ran."""
    peaks = frame.groupby("phase", sort=False)["allocated_mib"].max()
    return {str(phase): float(peak) for phase, peak in peaks.items()}


def plot(frame: pd.DataFrame, path: Path, title: str = "") -> Path:
    figure(frame, title).savefig(path, dpi=110)
    return path


def figure(frame: pd.DataFrame, title: str = "") -> Figure:
    """Allocated MiB after each allocation event, filled by phase."""
    chart = Figure(figsize=(8, 3.2))
    axes = chart.subplots()
    for phase, rows in frame.groupby("phase", sort=False):
        axes.fill_between(rows["event"], rows["allocated_mib"], step="post", alpha=0.6, label=str(phase))
    axes.set_xlabel("allocation event in the iteration")
    axes.set_ylabel("allocated MiB")
    axes.set_title(title or "allocated memory over one iteration, by phase")
    axes.legend(loc="upper left", fontsize="small")
    chart.tight_layout()
    return chart


def busiest_device(snapshot: dict[str, Any]) -> int:
    """The device whose trace holds the most events: the one the iteration ran on."""
    traces = snapshot["device_traces"]
    return max(range(len(traces)), key=lambda device: len(traces[device]))


def summarize(folder: Path, device: int) -> dict[str, Any]:
    """The chart written beside the snapshot, and what the run document keeps: files and peaks."""
    snapshot, marks = load(folder)
    frame = timeline(snapshot, marks, device)
    chart = plot(frame, folder / CHART)
    return {
        "snapshot": str(folder / SNAPSHOT),
        "chart": str(chart),
        "events": len(frame),
        "phase_peak_mib": phase_peaks(frame),
        "start_mib": float(frame["allocated_mib"].iloc[0]) if len(frame) else None,
    }
