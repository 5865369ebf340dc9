"""What a finished run adds to its baselines' history (``trainperf calibrate``, as ``--perf-calibrate``
does at the end of a run): the median and the host calls of each case whose time was judged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainperf import host_work_gate
from trainperf.report.document import RunDocument


def judged_medians(document: RunDocument) -> dict[str, float]:
    """Median ms of each case whose time was judged against a stored baseline, passed or failed: what
    ``--perf-calibrate`` adds to the history at the end of a run, read here from the run's checks."""
    return {case["name"]: float(case["extra_info"]["summary_ms"]["median"]) for case in document.cases if _judged(case)}


def judged_calls(document: RunDocument) -> dict[str, float]:
    """The host calls per iteration of the cases ``judged_medians`` gives, where they were counted."""
    counted = {
        case["name"]: host_work_gate.typical(case["extra_info"].get("host_calls") or [])
        for case in document.cases
        if _judged(case)
    }
    return {name: float(calls) for name, calls in counted.items() if calls is not None}


def _judged(case: Mapping[str, Any]) -> bool:
    checks = case["extra_info"].get("checks") or []
    return any(isinstance(c, dict) and c.get("name") == "baseline" and c.get("passed") is not None for c in checks)
