"""What the parent tells a child process (pure: no torch, no pytest): the child re-runs one test node
to profile one marked iteration (``--profile``), or to measure the case (or its reference) afresh in a
process of its own (``isolated.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MARK = "trainperf_iteration"  # the NVTX / record_function range around the profiled iteration
TRACE = "trace.json"  # the torch.profiler trace of the marked iteration
CHILD_INFO = "child.json"  # written by the child when it ran its marked iteration
MEASUREMENT = "measurement.json"  # written by a child that measured a case
MEASURE = ("case", "reference")  # what a measuring child measures


@dataclass(frozen=True)
class ChildRun:
    out_dir: Path  # where the child writes what it measured
    torch: bool  # run the marked iteration under torch.profiler and write its trace
    measure: str | None = None  # "case" or "reference": measure it and write MEASUREMENT instead
