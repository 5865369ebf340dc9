"""What the parent tells the child process of ``--profile`` (pure: no torch, no pytest)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MARK = "trainperf_iteration"  # the NVTX / record_function range around the profiled iteration
TRACE = "trace.json"  # the torch.profiler trace of the marked iteration
CHILD_INFO = "child.json"  # written by the child when it ran its marked iteration


@dataclass(frozen=True)
class ChildRun:
    out_dir: Path  # where the child writes what it measured
    torch: bool  # run the marked iteration under torch.profiler and write its trace
