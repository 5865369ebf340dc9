"""A run document's figures in the formats dashboards read, so that a nightly's numbers can be charted
and alerted on where users already look.

- github-action-benchmark's custom tools: ``customSmallerIsBetter`` (ms per iteration, peak MiB) and
  ``customBiggerIsBetter`` (samples, images or tokens per second; MFU in %): lists of
  ``{name, unit, value, range, extra}``.
- Bencher Metric Format (BMF): ``{case: {measure: {value, lower_value, upper_value}}}`` with Bencher's
  built-in ``latency`` (ns per iteration, the quartiles as bounds) and ``throughput`` (per second), and
  ``peak-memory`` (MiB) and ``mfu`` (%) measures, which Bencher creates on first use.

Pure: no torch, no pytest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainperf.store.locked_file import atomic_write

FORMATS = ("github-action-benchmark", "bencher")
SMALLER_FILE = "smaller-is-better.json"
BIGGER_FILE = "bigger-is-better.json"
BENCHER_FILE = "bencher.json"


def github_action_benchmark(cases: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(customSmallerIsBetter, customBiggerIsBetter) entries of the cases."""
    smaller: list[dict[str, Any]] = []
    bigger: list[dict[str, Any]] = []
    for case in cases:
        info, name = case["extra_info"], case["name"]
        summary = info["summary_ms"]
        extra = _extra(info)
        smaller.append(
            {"name": f"{name} time per iteration", "unit": "ms", "value": summary["median"],
             "range": f"± {summary['iqr']:.3f}", "extra": extra}  # as the summary's "ms/iter (± IQR)"
        )  # fmt: skip
        if info.get("peak_memory_bytes") is not None:
            mib = info["peak_memory_bytes"] / 2**20
            smaller.append({"name": f"{name} peak memory", "unit": "MiB", "value": mib, "extra": extra})
        unit = f"{info.get('sample_unit', 'samples')}/s"
        bigger.append({"name": f"{name} throughput", "unit": unit, "value": info["samples_per_second"], "extra": extra})
        if info.get("mfu") is not None:
            bigger.append({"name": f"{name} MFU", "unit": "%", "value": 100 * info["mfu"], "extra": extra})
    return smaller, bigger


def bencher(cases: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """The cases in Bencher Metric Format."""
    document: dict[str, dict[str, dict[str, float]]] = {}
    for case in cases:
        info = case["extra_info"]
        summary = info["summary_ms"]
        measures = {
            "latency": {"value": summary["median"] * 1e6, "lower_value": summary["q1"] * 1e6,
                        "upper_value": summary["q3"] * 1e6},
            "throughput": {"value": float(info["samples_per_second"])},
        }  # fmt: skip
        if info.get("peak_memory_bytes") is not None:
            measures["peak-memory"] = {"value": info["peak_memory_bytes"] / 2**20}
        if info.get("mfu") is not None:
            measures["mfu"] = {"value": 100 * info["mfu"]}
        document[case["name"]] = measures
    return document


def write(cases: Sequence[Mapping[str, Any]], chosen: str, directory: Path) -> list[Path]:
    """The files of format ``chosen`` in ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    if chosen == "bencher":
        return [_dump(directory / BENCHER_FILE, bencher(cases))]
    smaller, bigger = github_action_benchmark(cases)
    return [_dump(directory / SMALLER_FILE, smaller), _dump(directory / BIGGER_FILE, bigger)]


def _extra(info: Mapping[str, Any]) -> str:
    """The tooltip: verdict, the slowdown the case fails (its threshold) and the one caught nine times in
    ten, its speedup."""
    parts = [f"verdict: {info['verdict']}"]
    if info.get("min_detectable_slowdown") is not None:
        parts.append(f"threshold: {info['min_detectable_slowdown']:.1%}")
    if info.get("slowdown_caught_9_in_10") is not None:
        parts.append(f"caught 9/10: {info['slowdown_caught_9_in_10']:.1%}")
    if info.get("speedup") is not None:
        parts.append(f"speedup: {info['speedup']:.2f}x")
    return "\n".join(parts)


def _dump(path: Path, data: Any) -> Path:
    return atomic_write(path, json.dumps(data, indent=1) + "\n")
