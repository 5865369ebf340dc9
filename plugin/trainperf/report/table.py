"""The run's cases as a pandas table, shared by the terminal summary and other reports."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from trainperf.report.units import rate_text
from trainperf.session import CaseResult


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:+.1%}"


def cases_table(results: Sequence[CaseResult]) -> pd.DataFrame:
    """One row per case: time, baseline, speedup, throughput, accuracy, memory, verdict."""
    rows = []
    for r in results:
        m = r.measurement
        rows.append(
            {
                "case": r.key,
                "ms/iter": f"{r.summary.median:.3f} ± {r.summary.iqr:.3f}",
                "baseline ms": "" if r.baseline_median_ms is None else f"{r.baseline_median_ms:.3f}",
                "delta": _percent(r.baseline_delta),
                "speedup": "" if r.speedup is None else f"{r.speedup:.2f}x",
                "throughput/s": rate_text(r.samples_per_second, m.sample_unit),
                "MFU": "" if r.mfu is None else f"{r.mfu:.1%}",
                "reader": f"{r.reader_share:.0%}",
                r.metric_name if len({x.metric_name for x in results}) == 1 else "metric": f"{m.metric:.4f}",
                "peak MiB": "" if m.peak_memory_bytes is None else f"{m.peak_memory_bytes / 2**20:,.0f}",
                "warm-up s": f"{m.warmup_s:.1f}",
                "1st iter s": f"{m.first_step_s:.1f}",
                "verdict": r.verdict,
            }
        )
    return pd.DataFrame(rows)
