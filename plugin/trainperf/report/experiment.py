"""The experiment report's content, from run documents: the headline (verdict counts, failures, best
speedups); per workload the ladder chart, the cases table, the reference case's and the best case's
Top-5 with their rooflines and bottleneck verdicts, the per-iteration timing chart, memory by phase of
the cases with a snapshot; last the device and the clocks seen. ``pages`` writes it as HTML and Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from trainperf.record.document import RunDocument, cases_frame, merged_cases
from trainperf.report import charts
from trainperf.report.headline import Headline, build_headline, speedups
from trainperf.report.lines import culprit_line, profile_heading
from trainperf.report.memory_view import MemoryView, memory_table, memory_views
from trainperf.report.tables import display_cases, top_table
from trainperf.spec.optimization import REFERENCE


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
    speedup_png: bytes | None = None  # each step's speedup over the reference, with its interval
    memory: pd.DataFrame = field(default_factory=pd.DataFrame)  # peak MiB per phase of the recorded cases
    memory_views: list[MemoryView] = field(default_factory=list)


@dataclass(frozen=True)
class Report:
    title: str
    headline: Headline
    device: pd.DataFrame  # one row per device the documents name
    clocks: pd.DataFrame  # per case: SM clock, temperature, power, throttle reasons, steal, others' CPU use
    sections: list[WorkloadSection]
    notes: list[str]
    sources: list[str]
    unfinished: pd.DataFrame  # cases that started and did not finish: case, verdict, reason
    version_changes: list[str] = field(default_factory=list)  # since the cases' recording: torch, CUDA...
    culprits: list[str] = field(default_factory=list)  # the night's bisection of its failed cases, a line each


def build_report(documents: list[RunDocument]) -> Report:
    cases = merged_cases(documents)
    workloads = list(dict.fromkeys(case["group"] for case in cases))
    sections = [_section(name, [c for c in cases if c["group"] == name]) for name in workloads]
    devices = pd.DataFrame([_device_row(d) for d in documents]).drop_duplicates(ignore_index=True)
    notes = list(dict.fromkeys(note for d in documents for note in d.data.get("notes", [])))
    title = "trainperf report: " + ", ".join(dict.fromkeys(case["name"].split("/")[0] for case in cases))
    names = list(dict.fromkeys(map(str, devices["device"])))
    if len(names) > 1:
        title += " on " + ", ".join(names)
    headline = build_headline(cases)
    unfinished = pd.DataFrame(
        [{"case": c["name"], "verdict": c["verdict"], "reason": c["reason"]} for d in documents for c in d.unfinished],
        columns=["case", "verdict", "reason"],
    )
    sources = [str(d.path) for d in documents]
    changed = list(dict.fromkeys(line for d in documents for line in d.version_changes))
    culprits = [culprit_line(found) for d in documents for found in d.culprits]
    return Report(title, headline, devices, _clocks(cases), sections, notes, sources, unfinished, changed, culprits)


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
    """Per case, the clocks seen; with the device beside the case where the cases come from several."""
    several = len({case.get("device") for case in cases}) > 1
    rows = []
    for case in cases:
        clocks = case["extra_info"].get("clocks") or {}
        before, after = clocks.get("before") or {}, clocks.get("after") or {}
        during = clocks.get("during") or {}
        steal, thread_steal = during.get("host_steal_share"), during.get("thread_steal_share")
        others = during.get("other_processes_share")
        if not before and not after:
            continue
        throttle = sorted({*before.get("throttle", []), *after.get("throttle", [])})
        rows.append(
            {
                "case": f"{case['name']} ({case.get('device')})" if several else case["name"],
                "SM MHz before": before.get("sm_clock_mhz"),
                "SM MHz while timed (mean)": during.get("mean_sm_clock_mhz"),
                "SM MHz after": after.get("sm_clock_mhz"),
                "max SM MHz": after.get("sm_clock_max_mhz"),
                "°C after": after.get("temperature_c"),
                "W while timed (mean)": during.get("mean_power_w"),
                "W after": after.get("power_w"),
                "throttle": ", ".join(throttle) or "none",
                "host steal %": None if steal is None else round(100 * steal, 2),
                "timing thread's cores' steal %": None if thread_steal is None else round(100 * thread_steal, 2),
                "CPU % of processes the case did not start": None if others is None else round(100 * others, 2),
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
        speedup = best["extra_info"]["speedup"]
        role = "best" if speedup >= 1.0 else "fastest after the reference"
        views.append(profile_view(best, f"{role} ({speedup:.2f}x the reference)"))
    timing = charts.timing_chart(cases, f"{workload}: time per timed iteration")
    ladder = charts.ladder_roofline_chart(cases, workload)
    steps = speedups(cases)
    speedup = None if len(steps) < 2 else charts.ladder_chart(steps, f"{workload}: what each step buys")
    memory = memory_table(cases)
    return WorkloadSection(workload, display_cases(frame), views, timing, ladder, speedup, memory, memory_views(cases))


def _best(cases: list[dict[str, Any]], reference: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fastest case other than the reference, preferring one with a profile."""
    others = [c for c in cases if c is not reference and c["extra_info"].get("speedup") is not None]
    profiled = [c for c in others if (c["extra_info"].get("profile") or {}).get("top")]
    pool = profiled or others
    return max(pool, key=lambda c: c["extra_info"]["speedup"]) if pool else None


def profile_view(case: Mapping[str, Any], role: str) -> CaseProfileView:
    profile = case["extra_info"].get("profile")
    if not profile:
        return CaseProfileView(case["name"], role, "not profiled in this run (--profile=off)", "", pd.DataFrame())
    if profile.get("error"):
        return CaseProfileView(case["name"], role, f"no profile: {profile['error']}", "", pd.DataFrame())
    unit = profile.get("unit", "kernel")
    summary = profile_heading(profile | {"unit": unit})
    if profile.get("caveat"):
        summary += f". {profile['caveat']}"
    bottleneck = profile.get("bottleneck")
    verdict = "" if not bottleneck else f"{bottleneck['verdict']}: {bottleneck['reason']}"
    rows = profile["top"]
    reasons = [f"{rank}. {row['reason']}" for rank, row in enumerate(rows, 1) if row.get("reason")]
    chart = None
    if profile.get("roofline"):
        chart = charts.roofline_chart(profile["roofline"], f"{case['name']}: roofline of its Top-5 kernels")
    return CaseProfileView(case["name"], role, summary, verdict, top_table(rows, unit), reasons, chart)
