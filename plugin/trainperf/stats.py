"""Per-iteration samples -> a frozen summary, and comparisons between sample sets.

Pure: no torch, no pytest. Order statistics come from pytest-benchmark's ``Stats`` so that the
summary fields (median, iqr, q1, q3, ...) mean exactly what they mean in pytest-benchmark's JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_benchmark.stats import Stats as _BenchmarkStats
from scipy import stats as _scipy_stats

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    """Summary of per-iteration times in milliseconds."""

    rounds: int
    median: float
    q1: float
    q3: float
    iqr: float
    mean: float
    stddev: float
    min: float
    max: float
    cv: float  # stddev / mean
    ci_low: float  # distribution-free confidence interval of the median (CONFIDENCE)
    ci_high: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def summarize(samples: Sequence[float]) -> Summary:
    """Summarize at least one sample; raises ValueError on an empty or non-finite input."""
    if not samples:
        raise ValueError("no samples to summarize")
    if not all(math.isfinite(x) for x in samples):
        raise ValueError("samples contain NaN or infinity")
    bench = _BenchmarkStats()
    for value in samples:
        bench.update(float(value))
    low, high = median_confidence_interval(samples)
    mean = float(bench.mean)
    stddev = float(bench.stddev)
    return Summary(
        rounds=int(bench.rounds),
        median=float(bench.median),
        q1=float(bench.q1),
        q3=float(bench.q3),
        iqr=float(bench.iqr),
        mean=mean,
        stddev=stddev,
        min=float(bench.min),
        max=float(bench.max),
        cv=stddev / mean if mean else 0.0,
        ci_low=low,
        ci_high=high,
    )


def median_confidence_interval(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Order-statistic (binomial) confidence interval of the median; the whole range for tiny samples."""
    ordered = sorted(samples)
    n = len(ordered)
    lower_rank = int(_scipy_stats.binom.ppf((1 - confidence) / 2, n, 0.5))
    upper_rank = int(_scipy_stats.binom.isf((1 - confidence) / 2, n, 0.5))
    lower_rank = max(lower_rank - 1, 0)
    upper_rank = min(upper_rank, n - 1)
    return float(ordered[lower_rank]), float(ordered[upper_rank])


def slower_p_value(current: Sequence[float], baseline: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for 'current is slower (larger) than baseline'."""
    if not current or not baseline:
        raise ValueError("both sample sets must be non-empty")
    result = _scipy_stats.mannwhitneyu(current, baseline, alternative="greater")
    return float(result.pvalue)


def relative_change(current: float, reference: float) -> float:
    """(current - reference) / reference, e.g. 0.05 for 5% slower."""
    if reference <= 0:
        raise ValueError(f"reference must be positive, got {reference}")
    return (current - reference) / reference


def summary_from_dict(data: dict[str, Any]) -> Summary:
    """Rebuild a Summary stored by ``Summary.as_dict``."""
    return Summary(**{name: data[name] for name in Summary.__dataclass_fields__})
