"""What the parent tells a child process (pure: no torch, no pytest): the child re-runs test nodes to
profile one marked iteration of each of their cases (``--profile``), or one node to measure its case (or
its reference) afresh in a process of its own (``measuring``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CASE_RANGE = "trainperf_case:{key}"  # the NVTX range around a case's marked iteration, in a child of several
CHILD_INFO = "child.json"  # written by the child when it ran its marked iteration
MEASUREMENT = "measurement.json"  # written by a child that measured a case
MEASURE = ("case", "reference")  # what a measuring child measures
# the line a profiling child prints as it starts a case: its log tells which case a tool's message came in
CASE_STARTS = "trainperf: {key}: warm-up, then one marked iteration"


@dataclass(frozen=True)
class ChildRun:
    # a measuring child's folder; a profiling child's root, under which each case has its ``case_folder``
    out_dir: Path
    torch: bool  # run the marked iteration under torch.profiler and write its trace
    measure: str | None = None  # "case" or "reference": measure it and write MEASUREMENT instead
