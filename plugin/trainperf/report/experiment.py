"""The experiment report's content, from run documents: per workload the cases table, the reference
case's and the best case's Top-5 with their rooflines and bottleneck verdicts, the per-iteration timing
chart; the device and the clocks seen. ``pages`` writes it as HTML and Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from trainperf.report import charts
from trainperf.report.document import RunDocument, cases_frame, merged_cases
from trainperf.report.units import rate_text

REFERENCE = "reference"


@dataclass(frozen=True)
class CaseProfileView:
    """One case's profile as the report shows it."""

    case: str
    role: str  # "reference" or "best (4.21x)"
    summary: str  # tool, iteration time, cost; or why there is no profile
    verdict: str  # bottleneck verdict and its reason ("" without one)
    top: pd.DataFrame  # display table of the Top-5
    reasons: list[str] = field(default_factory=list)  # roofline reason per ranked kernel
    roofline_png: bytes | None = None


@dataclass(frozen=True)
class WorkloadSection:
    name: str
    cases: pd.DataFrame  # display table
    profiles: list[CaseProfileView]
    timing_png: bytes
    ladder_png: bytes | None = None  # every profiled case's heaviest kernel on one roofline


@dataclass(frozen=True)
class Report:
    title: str
    device: pd.DataFrame  # one row per device the documents name
    clocks: pd.DataFrame  # per case: SM clock before and after, temperature, power, throttle reasons
    sections: list[WorkloadSection]
    notes: list[str]
    sources: list[str]


def build_report(documents: list[RunDocument]) -> Report:
    cases = merged_cases(documents)
    workloads = list(dict.fromkeys(case["group"] for case in cases))
    sections = [_section(name, [c for c in cases if c["group"] == name]) for name in workloads]
    devices = pd.DataFrame([_device_row(d) for d in documents]).drop_duplicates(ignore_index=True)
    notes = list(dict.fromkeys(note for d in documents for note in d.data.get("notes", [])))
    title = "trainperf report: " + ", ".join(workloads)
    return Report(title, devices, _clocks(cases), sections, notes, [str(d.path) for d in documents])


def _device_row(document: RunDocument) -> dict[str, Any]:
    machine, data = document.machine, document.data
    memory = machine.get("memory_bytes")
    return {
        "device": machine.get("name"),
        "driver": machine.get("driver"),
        "torch": machine.get("torch"),
        "CUDA": machine.get("cuda"),
        "SMs": machine.get("sm_count"),
        "memory GiB": None if memory is None else round(memory / 2**30, 1),
        "size": data.get("settings", {}).get("size"),
        "commit": (data.get("commit_info") or {}).get("id"),
    }


def _clocks(cases: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for case in cases:
        clocks = case["extra_info"].get("clocks") or {}
        before, after = clocks.get("before") or {}, clocks.get("after") or {}
        if not before and not after:
            continue
        throttle = sorted({*before.get("throttle", []), *after.get("throttle", [])})
        rows.append(
            {
                "case": case["name"],
                "SM MHz before": before.get("sm_clock_mhz"),
                "SM MHz after": after.get("sm_clock_mhz"),
                "max SM MHz": after.get("sm_clock_max_mhz"),
                "°C after": after.get("temperature_c"),
                "W after": after.get("power_w"),
                "throttle": ", ".join(throttle) or "none",
            }
        )
    return pd.DataFrame(rows)


def _section(workload: str, cases: list[dict[str, Any]]) -> WorkloadSection:
    frame = cases_frame(cases)
    views = []
    reference = next((c for c in cases if c["name"].endswith("/" + REFERENCE)), None)
    if reference is not None:
        views.append(profile_view(reference, "reference"))
    best = _best(cases, reference)
    if best is not None:
        views.append(profile_view(best, f"best ({best['extra_info']['speedup']:.2f}x the reference)"))
    timing = charts.timing_chart(cases, f"{workload}: time per timed iteration")
    ladder = charts.ladder_roofline_chart(cases, workload)
    return WorkloadSection(workload, display_cases(frame), views, timing, ladder)


def _best(cases: list[dict[str, Any]], reference: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fastest case other than the reference, preferring one with a profile."""
    others = [c for c in cases if c is not reference and c["extra_info"].get("speedup") is not None]
    profiled = [c for c in others if (c["extra_info"].get("profile") or {}).get("top")]
    pool = profiled or others
    return max(pool, key=lambda c: c["extra_info"]["speedup"]) if pool else None


def display_cases(frame: pd.DataFrame) -> pd.DataFrame:
    """The cases table as text: median ± IQR, speedup, throughput, MFU, memory, accuracy, verdict."""
    return pd.DataFrame(
        {
            "case": frame["case"],
            "ms/iter (± IQR)": [f"{m:.3f} ± {q:.3f}" for m, q in zip(frame["median_ms"], frame["iqr_ms"], strict=True)],
            "speedup": [f"{s:.2f}x" for s in frame["speedup"]],
            "throughput/s": [rate_text(v, u) for v, u in zip(frame["per_second"], frame["unit"], strict=True)],
            "MFU": [_percent(v) for v in frame["mfu"]],
            "peak MiB": ["" if pd.isna(v) else f"{v:,.0f}" for v in frame["peak_mib"]],
            "accuracy": [f"{n} {v:.4f}" for n, v in zip(frame["metric"], frame["metric_value"], strict=True)],
            "1st iter s": ["" if pd.isna(v) else f"{v:.1f}" for v in frame["first_step_s"]],
            "baseline ms": ["" if pd.isna(v) else f"{v:.3f}" for v in frame["baseline_ms"]],
            "vs baseline": ["" if pd.isna(v) else f"{v:+.1%}" for v in frame["delta"]],
            "verdict": frame["verdict"],
        }
    )


def profile_view(case: dict[str, Any], role: str) -> CaseProfileView:
    profile = case["extra_info"].get("profile")
    if not profile:
        return CaseProfileView(case["name"], role, "not profiled in this run (--profile=off)", "", pd.DataFrame())
    if profile.get("error"):
        return CaseProfileView(case["name"], role, f"no profile: {profile['error']}", "", pd.DataFrame())
    unit = profile.get("unit", "kernel")
    summary = (
        f"Top-5 {unit}s of one iteration ({profile['iteration_ms']:.2f} ms), {profile['tool']}, "
        f"{profile['seconds']:.0f} s to profile"
    )
    bottleneck = profile.get("bottleneck")
    verdict = "" if not bottleneck else f"{bottleneck['verdict']}: {bottleneck['reason']}"
    rows = profile["top"]
    reasons = [f"{rank}. {row['reason']}" for rank, row in enumerate(rows, 1) if row.get("reason")]
    chart = None
    if profile.get("roofline"):
        chart = charts.roofline_chart(profile["roofline"], f"{case['name']}: roofline of its Top-5 kernels")
    return CaseProfileView(case["name"], role, summary, verdict, top_table(rows, unit), reasons, chart)


def top_table(rows: list[dict[str, Any]], unit: str) -> pd.DataFrame:
    """The Top-5 as text, full names included (they hold ``<``, ``>`` and ``&``: escape them in HTML)."""
    table = pd.DataFrame(
        {
            "#": range(1, len(rows) + 1),
            unit: [row["short"] for row in rows],
            "phase": [row["phase"] for row in rows],
            "calls": [row["calls"] for row in rows],
            "ms": [f"{row['total_ms']:.3f}" for row in rows],
            "share": [f"{row['share']:.0%}" for row in rows],
        }
    )
    if any(row.get("bound") for row in rows):
        table["precision"] = [str(r.get("precision") or "") + (" TC" if r.get("tensor_cores") else "") for r in rows]
        table["FLOP/B"] = ["" if r.get("intensity") is None else f"{r['intensity']:.3g}" for r in rows]
        table["bound"] = [r.get("bound") or "not profiled" for r in rows]
        table["% of roof"] = [_percent(r.get("roof_share"), digits=0) for r in rows]
    table["full name"] = [row["name"] for row in rows]
    return table


def _percent(value: float | None, digits: int = 1) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.{digits}%}"
