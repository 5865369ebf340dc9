"""What every profiler backend shares: the profile it yields from a capture (Top-5 kernels, bottleneck
verdict, roofline, raw files), the test process's trace or a child's. A backend profiles a ``job.Batch``
of cases at once: a child process costs seconds to start, its cases share it.

Backends: ``torchprof`` (torch.profiler), ``nsys`` (Nsight Systems), ``ncu`` (Nsight Compute on the
Top-5 of a torch.profiler trace). No torch or pytest here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pandas as pd

from trainperf.child.process import ChildError
from trainperf.measure import torch_trace
from trainperf.profile import launches
from trainperf.profile.job import Batch, Job
from trainperf.profile.roofline import RooflinePoint


@dataclass(frozen=True)
class Profile:
    """What a backend found in the marked iteration."""

    tool: str  # backend and version, e.g. "nsys 2025.3.1.0"
    top: pd.DataFrame  # the Top-5 kernel table (launches.kernel_table columns, plus roofline columns with ncu)
    bottleneck: launches.Bottleneck | None  # None when the capture holds no GPU kernels (CPU run)
    iteration_ms: float
    roofline: list[RooflinePoint] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # raw reports kept
    unit: str = "kernel"  # "kernel", or "operator" for a CPU run's torch.profiler operators
    configs: pd.DataFrame = field(default_factory=pd.DataFrame)  # the Top-5's launch configurations
    caveat: str | None = None  # what the tool said of this case's profile that its reader should know


class Backend(Protocol):
    name: str
    reads_trace: bool  # takes its Top-5 from the trace of the test process's counted iterations (Job.trace)

    def profile(self, batch: Batch) -> list[Profile | ChildError]:
        """Each job's profile, or the one-line reason it has none; the jobs' nodes re-run under the tool."""


def from_capture(capture: torch_trace.Capture, tool: str, job: Job, files: list[Path]) -> Profile:
    """The Top-5 and the bottleneck verdict of a capture's marked iteration."""
    marked = launches.iteration_launches(capture)
    if marked.empty:
        raise ChildError(f"{tool}: no kernels in the marked iteration of {job.nodeid}")
    begin, end = capture.iteration
    on_gpu = capture.unit == "kernel"
    verdict = launches.bottleneck(capture, marked, job.data_wait, job.timed_ms) if on_gpu else None
    top = launches.top_kernels(launches.kernel_table(marked))
    configs = launches.launch_configs(marked, top["name"])
    return Profile(tool, top, verdict, (end - begin) / 1e6, files=files, unit=capture.unit, configs=configs)
