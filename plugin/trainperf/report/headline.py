"""What a reader of the report needs first: how many cases passed, failed or ran unreliably, each failure
with its message, and what each workload's ladder bought (speedup of every step over its reference)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from trainperf.judge.verdict import Verdict
from trainperf.report.units import rate_text
from trainperf.spec.optimization import REFERENCE

VERDICTS = (Verdict.PASS, Verdict.FAIL, Verdict.UNRELIABLE)


@dataclass(frozen=True)
class Headline:
    counts: dict[str, int]  # cases per verdict, every verdict of VERDICTS shown
    failures: list[str]  # per failed case, the messages of its failed checks (each names the case)
    best: pd.DataFrame  # per workload: its fastest step, speedup, throughput


def build_headline(cases: Sequence[Mapping[str, Any]]) -> Headline:
    verdicts = [Verdict.read(case["extra_info"]["verdict"]) for case in cases]
    counts = {str(verdict): verdicts.count(verdict) for verdict in dict.fromkeys([*VERDICTS, *verdicts])}
    failures = [_failed_checks(case) for case, verdict in zip(cases, verdicts, strict=True) if verdict == Verdict.FAIL]
    return Headline(counts, failures, _best_per_workload(cases))


def _failed_checks(case: Mapping[str, Any]) -> str:
    messages = [check["message"] for check in case["extra_info"].get("checks", []) if check.get("passed") is False]
    text = "; ".join(messages) or "failed, with no message recorded"
    return text if text.startswith(case["name"]) else f"{case['name']}: {text}"


def _best_per_workload(cases: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    for workload in dict.fromkeys(case["group"] for case in cases):
        steps = speedups([case for case in cases if case["group"] == workload]).to_dict("records")
        if all(step["case"].endswith("/" + REFERENCE) for step in steps):
            continue
        best = max(steps, key=lambda step: float(step["speedup"]))  # the reference where no case beats it
        rows.append(
            {
                "workload": workload,
                "best case": best["case"],
                "speedup": f"{best['speedup']:.2f}x",
                "throughput/s": rate_text(best["per_second"], best["unit"]),
            }
        )
    return pd.DataFrame(rows, columns=["workload", "best case", "speedup", "throughput/s"])


def speedups(cases: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per case of one workload, in ladder order: speedup over the reference of the same run with
    an interval that holds both medians' 95% confidence intervals, and throughput. Cases without a
    speedup are left out."""
    rows = []
    reference = next((case for case in cases if case["name"].endswith("/" + REFERENCE)), None)
    for case in cases:
        info = case["extra_info"]
        if info.get("speedup") is None:
            continue
        low, high = _interval(info, None if reference is None else reference["extra_info"])
        rows.append(
            {
                "case": case["name"],
                "speedup": info["speedup"],
                "low": low,
                "high": high,
                "per_second": info["samples_per_second"],
                "unit": info.get("sample_unit", "samples"),
            }
        )
    return pd.DataFrame(rows, columns=["case", "speedup", "low", "high", "per_second", "unit"])


def _interval(info: Mapping[str, Any], reference: Mapping[str, Any] | None) -> tuple[float, float]:
    """The speedup's range when this case's median and the reference's each lie anywhere in their
    confidence intervals; the speedup alone without the reference in the document. A speedup measured
    against a reference of another document need not fall in that range: the range then stretches to it."""
    speedup = float(info["speedup"])
    if reference is None:
        return speedup, speedup
    case_ms, reference_ms = info["summary_ms"], reference["summary_ms"]
    low = speedup * case_ms["median"] / case_ms["ci_high"] * reference_ms["ci_low"] / reference_ms["median"]
    high = speedup * case_ms["median"] / case_ms["ci_low"] * reference_ms["ci_high"] / reference_ms["median"]
    return min(low, speedup), max(high, speedup)
