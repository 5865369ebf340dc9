"""Per-iteration samples -> a frozen summary, comparisons between sample sets, and the run-level noise
that decides how large a slowdown the gate can tell from chance.

Pure: no torch, no pytest. Order statistics come from pytest-benchmark's ``Stats`` so that the
summary fields (median, iqr, q1, q3, ...) mean exactly what they mean in pytest-benchmark's JSON.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_benchmark.stats import Stats as _BenchmarkStats

CONFIDENCE = 0.95
GATE_CONFIDENCE = 0.99  # a run of unchanged code is judged slower at most 1% of the time by chance
MIN_RUNS = 3  # run medians needed before their spread is taken as the noise
NORMAL_IQR = 1.349  # interquartile range of a standard normal distribution, in standard deviations
RELIABLE_POWER = 0.9  # a slowdown counts as caught reliably when caught nine times in ten


def _scipy_stats() -> Any:
    """scipy.stats, imported on first use: at import it would cost every pytest process half a second."""
    from scipy import stats

    return stats


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
    lower_rank = median_rank((1 - confidence) / 2, n)
    upper_rank = median_rank(1 - (1 - confidence) / 2, n)
    lower_rank = max(lower_rank - 1, 0)
    upper_rank = min(upper_rank, n - 1)
    return float(ordered[lower_rank]), float(ordered[upper_rank])


def median_rank(q: float, n: int) -> int:
    """``scipy.stats.binom.ppf(q, n, 0.5)``, from ``scipy.special`` as scipy computes it: every measured run's
    summary needs it, and importing scipy.stats would cost each process that measures a third of a second."""
    from scipy import special

    rank = math.ceil(float(special.bdtrik(q, n, 0.5)))
    below = max(rank - 1, 0)
    return below if float(special.bdtr(below, n, 0.5)) >= q else rank


def slower_p_value(current: Sequence[float], baseline: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for 'current is slower (larger) than baseline'."""
    if not current or not baseline:
        raise ValueError("both sample sets must be non-empty")
    result = _scipy_stats().mannwhitneyu(current, baseline, alternative="greater")
    return float(result.pvalue)


def relative_change(current: float, reference: float) -> float:
    """(current - reference) / reference, e.g. 0.05 for 5% slower."""
    if reference <= 0:
        raise ValueError(f"reference must be positive, got {reference}")
    return (current - reference) / reference


def apart_p_value(group: Sequence[float], rest: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test that ``group`` and ``rest`` share one mean (unequal spreads
    allowed); None where either holds fewer than two values. Two sets that do not spread at all are apart
    (0.0) unless their values are equal (1.0)."""
    if len(group) < 2 or len(rest) < 2:
        return None
    if statistics.pvariance(group) == 0 and statistics.pvariance(rest) == 0:
        return 1.0 if statistics.fmean(group) == statistics.fmean(rest) else 0.0
    return float(_scipy_stats().ttest_ind(group, rest, equal_var=False).pvalue)


def summary_from_dict(data: dict[str, Any]) -> Summary:
    """Rebuild a Summary stored by ``Summary.as_dict``."""
    return Summary(**{name: data[name] for name in Summary.__dataclass_fields__})


@dataclass(frozen=True)
class RunNoise:
    """How much the median of a whole run moves between independent runs of the same code.

    ``threshold`` is the slowdown beyond which a new run's median lies outside the one-sided
    ``GATE_CONFIDENCE`` prediction interval of the stored runs (Student's t, for few runs), and never
    below ``floor``. The spread it uses is the run medians' or, where larger, the iterations' own spread
    within a run: runs recorded minutes apart can agree far more closely than runs on other nights
    (research/evidence/h200-examples-gate.md). ``spread`` is None with fewer than ``MIN_RUNS`` runs, when
    ``threshold`` is the caller's fallback."""

    runs: int
    center_ms: float  # mean of the run medians
    spread: float | None  # relative standard deviation of the run medians
    threshold: float
    iteration_spread: float = 0.0  # robust relative spread of the iterations within a run

    @property
    def measured(self) -> bool:
        return self.spread is not None


def run_noise(
    run_medians_ms: Sequence[float],
    floor: float,
    fallback: float,
    iteration_spread: float = 0.0,
    history_ms: Sequence[float] = (),
    center: Callable[[Sequence[float]], float] = statistics.mean,
) -> RunNoise:
    """The noise of ``run_medians_ms`` (one median per recorded run, at least one) and ``history_ms``
    (medians of runs accepted on later nights), taken as at least ``iteration_spread``. The center is
    the recorded runs' alone (their mean; ``center`` tries another): later runs widen the measured
    noise, they never move the baseline."""
    if not run_medians_ms:
        raise ValueError("no run medians")
    runs = [*run_medians_ms, *history_ms]
    n = len(runs)
    center_ms = float(center(run_medians_ms))  # exact, so that equal runs have no spread
    if n < MIN_RUNS:
        return RunNoise(n, center_ms, None, max(floor, fallback), iteration_spread)
    spread = statistics.stdev(runs, xbar=center_ms) / center_ms  # about the recorded center, n - 1 degrees
    t = float(_scipy_stats().t.ppf(GATE_CONFIDENCE, n - 1))
    threshold = max(floor, t * max(spread, iteration_spread) * math.sqrt(1 + 1 / n))
    return RunNoise(n, center_ms, spread, threshold, iteration_spread)


def _slowed_spread(noise: RunNoise) -> float | None:
    """How a slowed run's median spreads about its mean: as the unslowed runs' do (the larger of the run
    medians' and the iterations' spread, as the threshold takes it). None without measured noise."""
    return None if noise.spread is None else max(noise.spread, noise.iteration_spread)


def reliably_caught(noise: RunNoise, power: float = RELIABLE_POWER, confirmed: bool = True) -> float | None:
    """The slowdown caught with probability ``power``, where ``threshold`` is the one caught half the
    time. With ``confirmed`` a failure needs the second measurement past the threshold too, both taken as
    independent (measurements that move together are caught more often). None without measured noise."""
    sigma = _slowed_spread(noise)
    if sigma is None:
        return None
    each = math.sqrt(power) if confirmed else power
    return noise.threshold + float(_scipy_stats().norm.ppf(each)) * sigma


def caught_share(noise: RunNoise, slowdown: float, confirmed: bool = True) -> float | None:
    """The share of runs slowed by ``slowdown`` that the gate fails: ``reliably_caught`` read the other way.
    None without measured noise."""
    sigma = _slowed_spread(noise)
    if sigma is None:
        return None
    each = (
        float(slowdown > noise.threshold)
        if sigma == 0
        else float(_scipy_stats().norm.cdf((slowdown - noise.threshold) / sigma))
    )
    return each * each if confirmed else each


def iteration_spread(samples_ms: Sequence[float], runs: int) -> float:
    """The median over ``runs`` equal consecutive chunks of ``samples_ms`` (one per run) of each run's
    robust relative spread: IQR / 1.349 / median, a standard deviation where the times are normal and
    outliers do not move it. 0.0 where the samples do not split into ``runs`` equal runs."""
    if runs < 1 or not samples_ms or len(samples_ms) % runs:
        return 0.0
    size = len(samples_ms) // runs
    spreads = []
    for start in range(0, len(samples_ms), size):
        summary = summarize(samples_ms[start : start + size])
        spreads.append(summary.iqr / NORMAL_IQR / summary.median if summary.median > 0 else 0.0)
    return statistics.median(spreads)
