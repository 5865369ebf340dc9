"""The GPU's busy share over a timed window, from NVML's utilization samples.

NVML measures the share of time a kernel ran over fixed sample periods (0.2 s on the H200; 1/6 s to
1 s by product) and keeps each sample with the time its period ended. A sample whose period began
before the window mixes in what ran before it: averaging the latest readings under-reads a short busy
window (research/evidence/h200-gpu-busy-window.md). The samples whose
periods lie wholly inside the window read it exactly, so only those count; a window too short to hold
one has no busy share.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """One NVML utilization sample: ``ended`` (seconds since the epoch) closes its period."""

    ended: float
    busy_percent: float


def sample_period(samples: Sequence[Sample]) -> float | None:
    """The spacing of NVML's samples (their median gap); None with fewer than two."""
    times = sorted(sample.ended for sample in samples)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times) if later > earlier]
    return statistics.median(gaps) if gaps else None


def inside(samples: Sequence[Sample], started: float, ended: float) -> list[Sample]:
    """The samples whose whole period lies within ``started``..``ended``."""
    period = sample_period(samples)
    if period is None:
        return []
    return [sample for sample in samples if sample.ended - period >= started and sample.ended <= ended]


def mean_share(whole: Sequence[Sample]) -> float | None:
    """The share of time a kernel ran (0 to 1) over samples already known to lie inside a window
    (``inside``); None for none."""
    return statistics.fmean(sample.busy_percent for sample in whole) / 100.0 if whole else None


def busy_share(samples: Sequence[Sample], started: float, ended: float) -> float | None:
    """The share of the window's time a kernel ran (0 to 1), from the samples wholly inside it; None
    where none is."""
    return mean_share(inside(samples, started, ended))
