"""The report's charts as PNG bytes: per-iteration times against the baseline band, and a case's roofline
rebuilt from its run-document entry. matplotlib without pyplot."""

from __future__ import annotations

import dataclasses
import io
import math
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from trainperf.profile.roofline import RooflinePoint
from trainperf.report.roofline_plot import bandwidth_figure, case_figure, roofline_figure, without_flops
from trainperf.report.units import rate_text

COLUMNS = 3


def png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def timing_chart(cases: list[dict[str, Any]], title: str) -> bytes:
    """One panel per case: each timed iteration's ms, the run's median, and the stored baseline's
    median with its interquartile band where the run document has them."""
    rows = math.ceil(len(cases) / COLUMNS)
    figure = Figure(figsize=(4.2 * COLUMNS, 2.6 * rows))
    axes_grid = figure.subplots(rows, COLUMNS, squeeze=False)
    for axes, case in zip(axes_grid.flat, cases, strict=False):
        samples = [seconds * 1000.0 for seconds in case["stats"]["data"]]
        info = case["extra_info"]
        axes.plot(range(1, len(samples) + 1), samples, marker=".", linewidth=0.8, label="this run")
        axes.axhline(info["summary_ms"]["median"], linewidth=0.8, linestyle=":", color="C0")
        band = info.get("baseline_summary_ms")
        if band:
            axes.axhspan(band["q1"], band["q3"], color="C2", alpha=0.2, label="baseline IQR")
        if info.get("baseline_median_ms"):
            axes.axhline(info["baseline_median_ms"], color="C2", linewidth=1, label="baseline median")
        axes.set_title(case["name"], fontsize=9)
        axes.set_xlabel("timed iteration", fontsize=8)
        axes.set_ylabel("ms", fontsize=8)
        axes.tick_params(labelsize=7)
    for axes in list(axes_grid.flat)[len(cases) :]:
        axes.set_visible(False)
    axes_grid.flat[0].legend(fontsize=7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return png(figure)


def roofline_chart(points: list[dict[str, Any]], title: str) -> bytes:
    """A case's roofline from the ``roofline`` points of its run-document profile."""
    return png(case_figure([RooflinePoint(**point) for point in points], title))


def ladder_points(cases: list[dict[str, Any]]) -> list[RooflinePoint]:
    """Each profiled case's heaviest kernel (most time in the iteration), named by its case."""
    points = []
    for case in cases:
        found = [RooflinePoint(**p) for p in ((case["extra_info"].get("profile") or {}).get("roofline") or [])]
        if found:
            heaviest = max(found, key=lambda point: point.time_s)
            points.append(dataclasses.replace(heaviest, kernel=case["name"].split("/")[-1]))
    return points


def ladder_roofline_chart(cases: list[dict[str, Any]], workload: str) -> bytes | None:
    """The cases' heaviest kernels on one roofline: the ladder climbing (or not) towards its roofs; when
    most of them do no floating-point work (copies, transposes), their DRAM bandwidth against the DRAM
    roof instead. None when fewer than two cases have a roofline point."""
    points = ladder_points(cases)
    if len(points) < 2:
        return None
    if without_flops(points):
        return png(bandwidth_figure(points, f"{workload}: each case's heaviest kernel against the DRAM roof"))
    figure = roofline_figure(points, f"{workload}: each case's heaviest kernel on the roofline", legend_only=True)
    figure.set_size_inches(11, 5.5)
    figure.tight_layout()
    return png(figure)


def ladder_chart(steps: pd.DataFrame, title: str) -> bytes:
    """The picture people share: each step's speedup over the reference (``headline.speedups``), with its
    interval, and its throughput written beside the bar."""
    figure = Figure(figsize=(8, 0.45 * len(steps) + 1.2))
    axes = figure.subplots()
    positions = range(len(steps))[::-1]  # the reference on top, the ladder going down
    errors = [steps["speedup"] - steps["low"], steps["high"] - steps["speedup"]]
    axes.barh(list(positions), steps["speedup"], xerr=errors, color="C0", alpha=0.8, capsize=3)
    axes.axvline(1.0, color="gray", linewidth=0.8, linestyle=":")
    for position, row in zip(positions, steps.to_dict("records"), strict=True):
        label = f" {row['speedup']:.2f}x, {rate_text(row['per_second'], row['unit'])}/s"
        axes.text(float(row["high"]), position, label, va="center", fontsize=8)
    axes.set_yticks(list(positions), [name.split("/", 1)[-1] for name in steps["case"]], fontsize=8)
    axes.set_xlabel("speedup over the reference (interval: both medians' 95% confidence intervals)", fontsize=8)
    axes.set_xlim(0, max(steps["high"].max(), 1.0) * 1.45)  # room for the labels
    axes.set_title(title, fontsize=10)
    figure.tight_layout()
    return png(figure)
