"""What a finished run adds to its baselines' history (``trainperf calibrate``, as ``--perf-calibrate``
does at the end of a run): the median, host calls and GPU busy share of each case whose time was judged
or awaits calibration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainperf.judge import host_work_check, policy
from trainperf.record.document import RunDocument


def judged_medians(document: RunDocument) -> dict[str, float]:
    """Median ms of each case whose time was judged against a stored baseline, passed or failed: what
    ``--perf-calibrate`` adds to the history at the end of a run, read here from the run's checks."""
    return {case["name"]: float(case["extra_info"]["summary_ms"]["median"]) for case in document.cases if _judged(case)}


def judged_figures(document: RunDocument) -> dict[str, dict[str, float]]:
    """The host calls per iteration and the GPU's busy share of the cases ``judged_medians`` gives, by
    history key, where the run has them."""
    figures: dict[str, dict[str, float]] = {}
    for case in filter(_judged, document.cases):
        info = case["extra_info"]
        busy = ((info.get("clocks") or {}).get("during") or {}).get("gpu_busy_share")
        calls, step_calls = info.get("host_calls") or [], info.get("host_step_calls") or []
        for key, value in host_work_check.history_figures(calls, busy, step_calls).items():
            figures.setdefault(key, {})[case["name"]] = value
    return figures


def _judged(case: Mapping[str, Any]) -> bool:
    return policy.time_judged(case["extra_info"].get("checks") or [], calibrating=True)
