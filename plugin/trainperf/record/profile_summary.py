"""A case's profile as a run-document entry."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a profile exists only with --profile: its tables stay out of processes that measure
    from trainperf.profile.profiler import CaseProfile


def top_records(case: CaseProfile) -> list[dict[str, Any]]:
    """The Top-5 rows as plain values (NaN -> None)."""
    if case.profile is None:
        return []
    top = case.profile.top.astype(object).where(case.profile.top.notna(), None)
    rows: list[dict[str, Any]] = [{str(k): v for k, v in row.items()} for row in top.to_dict(orient="records")]
    return [row | {"total_ms": row["total_ns"] / 1e6} for row in rows]


def record(case: CaseProfile) -> dict[str, Any]:
    """The run document's ``profile`` entry."""
    found = case.profile
    entry: dict[str, Any] = {"seconds": case.seconds, "dir": str(case.out_dir), "error": case.error}
    entry["batch"] = case.batch  # the cases profiled together with it (the child they shared)
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
        "caveat": found.caveat,
    }
