"""A case's JUnit properties (``record_property``), read from its run-document entry."""

from __future__ import annotations

from typing import Any

from trainperf.judge import host_work_check
from trainperf.judge.verdict import Verdict, outcome
from trainperf.record.result import CaseEntry


def properties(entry: CaseEntry) -> dict[str, Any]:
    """The case's figures and verdict, its data-parallel figures, and its profile; None values left out."""
    info = entry["extra_info"]
    summary, metric = info["summary_ms"], info["metric"]
    speedup, mfu, calls = info["speedup"], info["mfu"], info.get("host_calls")
    found: dict[str, Any] = {
        "trainperf_case": entry["name"],
        "trainperf_median_ms": round(summary["median"], 4),
        "trainperf_iqr_ms": round(summary["iqr"], 4),
        "trainperf_speedup": None if speedup is None else round(speedup, 3),
        "trainperf_baseline_ms": info["baseline_median_ms"],
        "trainperf_min_detectable_slowdown": info["min_detectable_slowdown"],
        "trainperf_slowdown_caught_9_in_10": info.get("slowdown_caught_9_in_10"),
        "trainperf_min_detectable_host_work": info.get("min_detectable_host_work"),
        "trainperf_min_detectable_kernel_time": info.get("min_detectable_kernel_time"),
        "trainperf_host_calls": host_work_check.typical(calls or []),
        "trainperf_samples_per_s": round(info["samples_per_second"], 1),
        "trainperf_sample_unit": info["sample_unit"],
        "trainperf_mfu": None if mfu is None else round(mfu, 4),
        "trainperf_fp8_flop_share": info.get("fp8_flop_share"),
        "trainperf_first_step_s": round(info["first_step_s"], 3),
        "trainperf_reader_share": round(info["reader_share"], 4),
        f"trainperf_{metric['name']}": round(metric["value"], 5),
        "trainperf_peak_memory_bytes": info["peak_memory_bytes"],
        "trainperf_verdict": info["verdict"],
    }
    work = (info.get("work") or [{}])[0]
    for key in ("ops", "syncs", "copies", "kernels", "kernel_ms"):
        found[f"trainperf_work_{key}"] = work.get(key)
    for check in info.get("checks", []):
        found[f"trainperf_check_{check['name'].replace(' ', '_')}"] = str(outcome(check["passed"]))
    figures = info["communication"]
    if figures is not None:
        processes = figures["processes"]
        found["trainperf_processes"] = processes
        scaling = info.get("scaling")
        if scaling is not None:
            found["trainperf_scaling_efficiency"] = round(scaling["efficiency"], 4)
            found["trainperf_scaling"] = scaling["kind"]
        found["trainperf_allreduce_busbw_gbs"] = round(figures["all_reduce_busbw_gbs"], 2)
        found["trainperf_comm_hidden_share"] = figures.get("hidden_share")
    if info["profile"] is not None:
        found |= profile_properties(info["profile"])
    return {name: value for name, value in found.items() if value is not None}


def unfinished_properties(key: str, verdict: Verdict, reason: str) -> dict[str, str]:
    """A case that ended without figures (an error, its time limit, an interrupt): its name, verdict
    and one-line reason, as run.json's ``unfinished`` lists it."""
    return {"trainperf_case": key, "trainperf_verdict": str(verdict), "trainperf_reason": reason}


def profile_properties(profile: dict[str, Any]) -> dict[str, Any]:
    """Tool, cost, verdict, and per Top-5 kernel its name, time, share, phase and roofline."""
    found: dict[str, Any] = {"trainperf_profile_s": round(profile["seconds"], 1)}
    found["trainperf_profile_dir"] = profile["dir"]
    if "tool" not in profile:
        return {**found, "trainperf_profile_error": profile["error"]}
    found["trainperf_profile_tool"] = profile["tool"]
    bottleneck = profile["bottleneck"]
    if bottleneck is not None:
        found["trainperf_bottleneck"] = bottleneck["verdict"]
        found["trainperf_gpu_busy"] = round(bottleneck["gpu_busy"], 3)
    for rank, row in enumerate(profile["top"], start=1):
        prefix = f"trainperf_top{rank}_"
        found |= {
            prefix + "kernel": row["short"],
            prefix + "ms": round(row["total_ms"], 4),
            prefix + "share": round(row["share"], 4),
            prefix + "calls": row["calls"],
            prefix + "phase": row["phase"],
        }
        if row.get("bound") is not None:
            found |= {
                prefix + "bound": row["bound"],
                prefix + "roof_share": None if row["roof_share"] is None else round(row["roof_share"], 3),
                prefix + "precision": row["precision"],
                prefix + "tensor_cores": row["tensor_cores"],
            }
    found["trainperf_profile_files"] = ";".join(profile["files"])
    return found
