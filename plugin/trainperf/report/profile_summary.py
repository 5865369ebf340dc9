"""A case's profile as JUnit properties, as a run-document entry and as terminal lines."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from trainperf.profile.profiler import CaseProfile


def top_records(case: CaseProfile) -> list[dict[str, Any]]:
    """The Top-5 rows as plain values (NaN -> None)."""
    if case.profile is None:
        return []
    top = case.profile.top.astype(object).where(case.profile.top.notna(), None)
    rows: list[dict[str, Any]] = [{str(k): v for k, v in row.items()} for row in top.to_dict(orient="records")]
    return [row | {"total_ms": row["total_ns"] / 1e6} for row in rows]


def properties(case: CaseProfile) -> dict[str, Any]:
    """JUnit properties: tool, cost, verdict, and per Top-5 kernel its name, time, share, phase, roofline."""
    found = case.profile
    props: dict[str, Any] = {"trainperf_profile_s": round(case.seconds, 1), "trainperf_profile_dir": str(case.out_dir)}
    if found is None:
        return {**props, "trainperf_profile_error": case.error}
    props["trainperf_profile_tool"] = found.tool
    if found.bottleneck is not None:
        props["trainperf_bottleneck"] = found.bottleneck.verdict
        props["trainperf_gpu_busy"] = round(found.bottleneck.gpu_busy, 3)
    for rank, row in enumerate(top_records(case), start=1):
        prefix = f"trainperf_top{rank}_"
        props |= {
            prefix + "kernel": row["short"],
            prefix + "ms": round(row["total_ms"], 4),
            prefix + "share": round(row["share"], 4),
            prefix + "calls": row["calls"],
            prefix + "phase": row["phase"],
        }
        if row.get("bound") is not None:
            props |= {
                prefix + "bound": row["bound"],
                prefix + "roof_share": None if row["roof_share"] is None else round(row["roof_share"], 3),
                prefix + "precision": row["precision"],
                prefix + "tensor_cores": row["tensor_cores"],
            }
    props["trainperf_profile_files"] = ";".join(str(path) for path in [*found.files, *case.files])
    return props


def record(case: CaseProfile) -> dict[str, Any]:
    """The run document's ``profile`` entry."""
    found = case.profile
    entry: dict[str, Any] = {"seconds": case.seconds, "dir": str(case.out_dir), "error": case.error}
    if found is None:
        return entry
    bottleneck = found.bottleneck
    return entry | {
        "tool": found.tool,
        "unit": found.unit,
        "iteration_ms": found.iteration_ms,
        "bottleneck": None if bottleneck is None else dataclasses.asdict(bottleneck),
        "top": top_records(case),
        "roofline": [point.as_dict() for point in found.roofline],
        "files": [str(path) for path in [*found.files, *case.files]],
    }


def lines(key: str, case: CaseProfile) -> list[str]:
    """A heading, the Top-5 table and the roofline reasons, for the terminal."""
    found = case.profile
    if found is None:
        return [f"{key}: no profile ({case.error})"]
    heading = f"{key}: Top-5 {found.unit}s of one iteration ({found.iteration_ms:.2f} ms), {found.tool}"
    heading += f", {case.seconds:.0f} s to profile"
    if found.bottleneck is not None:
        heading += f"\n  {found.bottleneck.verdict}: {found.bottleneck.reason}"
    rows = top_records(case)
    table = pd.DataFrame(
        {
            "#": range(1, len(rows) + 1),
            found.unit: [str(r["short"])[:48] for r in rows],
            "phase": [r["phase"] for r in rows],
            "calls": [r["calls"] for r in rows],
            "ms": [f"{r['total_ms']:.3f}" for r in rows],
            "share": [f"{r['share']:.0%}" for r in rows],
            **_roofline_columns(rows),
        }
    )
    reasons = [f"  {rank}. {row['reason']}" for rank, row in enumerate(rows, 1) if row.get("reason")]
    return [heading, *("  " + line for line in table.to_string(index=False).splitlines()), *reasons]


def _roofline_columns(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    if not any(row.get("bound") for row in rows):
        return {}
    return {
        "precision": [str(r.get("precision") or "") + (" TC" if r.get("tensor_cores") else "") for r in rows],
        "FLOP/B": ["" if r.get("intensity") is None else f"{r['intensity']:.3g}" for r in rows],
        "bound": [r.get("bound") or "not profiled" for r in rows],
        "% roof": ["" if r.get("roof_share") is None else f"{r['roof_share']:.0%}" for r in rows],
    }
