"""A case's roofline as a PNG (log-log): compute roofs per precision, DRAM, L2 and L1 bandwidth roofs,
and each profiled kernel at its DRAM intensity (filled), L2 and L1 intensities (hollow)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from trainperf.measure.torch_trace import short_name
from trainperf.profile.roofline import RooflinePoint
from trainperf.store.locked_file import atomic_write

MEMORY_ROOFS = (("DRAM", "peak_bandwidth", "dram_bytes", "o"), ("L2", "peak_l2_bandwidth", "l2_bytes", "s"),
                ("L1", "peak_l1_bandwidth", "l1_bytes", "^"))  # fmt: skip


def plot_roofline(points: Sequence[RooflinePoint], path: Path, title: str) -> Path:
    """Write the chart of ``points`` to ``path``."""
    buffer = io.BytesIO()
    case_figure(points, title).savefig(buffer, format="png", dpi=110)
    return atomic_write(path, buffer.getvalue())


def case_figure(points: Sequence[RooflinePoint], title: str) -> Figure:
    """The roofline of a case's kernels, or their bandwidth chart when most of them do no FLOPs."""
    return bandwidth_figure(points, title) if without_flops(points) else roofline_figure(points, title)


def without_flops(points: Sequence[RooflinePoint]) -> bool:
    """Most kernels do no floating-point work (copies, transposes): a FLOP/s roofline cannot show them."""
    return 2 * sum(not point.flops for point in points) >= len(points)


def roofline_figure(points: Sequence[RooflinePoint], title: str, legend_only: bool = False) -> Figure:
    """The chart of ``points``; with ``legend_only`` each point is named in the legend rather than beside
    it, at its DRAM intensity only (many points: a ladder of cases)."""
    figure = Figure(figsize=(8, 5.5))  # no pyplot: no global state, no display needed
    axes = figure.subplots()
    intensities = _axis(points)
    peaks: dict[str, float] = {}
    for p in points:
        if p.peak_flops:
            peaks[p.precision] = max(p.peak_flops, peaks.get(p.precision, 0.0))
    for precision, peak in peaks.items():
        axes.axhline(peak, linestyle="--", linewidth=1, color="gray")
        axes.annotate(f"{precision} {peak / 1e12:.0f} TFLOP/s", (intensities[0], peak), va="bottom", fontsize=8)
    top_peak = max(peaks.values(), default=None)
    for level, roof, _, _ in MEMORY_ROOFS:
        bandwidth = _mean([getattr(p, roof) for p in points])
        if bandwidth and top_peak:
            axes.plot(intensities, np.minimum(intensities * bandwidth, top_peak), linewidth=1,
                      label=f"{level} {bandwidth / 1e12:.1f} TB/s")  # fmt: skip
    colors = matplotlib.colormaps["tab20" if legend_only else "tab10"]
    for index, point in enumerate(p for p in points if p.flops and p.time_s):
        achieved = point.flops / point.time_s
        label = f"{short_name(point.kernel)[:32]} ({point.bound}, {_percent(point.roof_share)})"
        if legend_only:
            if point.dram_bytes:
                axes.scatter(point.flops / point.dram_bytes, achieved, color=colors(index % 20), zorder=3, label=label)
            continue
        for level, _, traffic, marker in MEMORY_ROOFS:
            moved = getattr(point, traffic)
            if moved:
                axes.scatter(point.flops / moved, achieved, marker=marker, color=colors(index % 10),
                             facecolors=colors(index % 10) if level == "DRAM" else "none", zorder=3)  # fmt: skip
        axes.annotate(label, (point.intensity, achieved), fontsize=7, xytext=(4, 4), textcoords="offset points")
    axes.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="FLOP/s", title=title)
    if legend_only:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, title="at DRAM intensity",
                    title_fontsize=7)  # fmt: skip
    else:
        axes.legend(loc="lower right", fontsize=8, title="filled: DRAM, hollow: L2 (square), L1 (triangle)",
                    title_fontsize=7)  # fmt: skip
    axes.grid(True, which="major", linewidth=0.3)
    figure.tight_layout()
    return figure


def bandwidth_figure(points: Sequence[RooflinePoint], title: str) -> Figure:
    """Kernels that do (next to) no floating-point work, such as copies and transposes, cannot sit on a
    FLOP/s roofline: one bar per kernel of the DRAM bandwidth it reached, against the DRAM roof."""
    figure = Figure(figsize=(9, 1.6 + 0.45 * len(points)))
    axes = figure.subplots()
    names = [short_name(p.kernel)[:32] for p in points]
    reached = [p.dram_bytes / p.time_s / 1e12 if p.time_s else 0.0 for p in points]
    axes.barh(names, reached, color="C0")
    for row, (point, value) in enumerate(zip(points, reached, strict=True)):
        share = value * 1e12 / point.peak_bandwidth if point.peak_bandwidth else None
        axes.annotate(f"{value:.2f} TB/s, {_percent(share)} ({point.bound})", (value, row), xytext=(4, 0),
                      textcoords="offset points", va="center", fontsize=8)  # fmt: skip
    roof = _mean([p.peak_bandwidth for p in points])
    if roof:
        axes.axvline(roof / 1e12, linestyle="--", linewidth=1, color="C3", label=f"DRAM roof {roof / 1e12:.2f} TB/s")
    axes.set_xlim(0, 1.45 * max([*reached, (roof or 0.0) / 1e12, 0.001]))  # room for the labels
    axes.invert_yaxis()  # the first case on top
    axes.set(xlabel="DRAM bandwidth reached (TB/s)", title=title)
    if roof:
        axes.legend(loc="lower right", fontsize=8)
    axes.grid(True, axis="x", linewidth=0.3)
    figure.tight_layout()
    return figure


def _axis(points: Sequence[RooflinePoint]) -> np.ndarray:
    """Intensities from a decade below the lowest point to a decade above the highest."""
    found = [p.flops / moved for p in points for moved in (p.dram_bytes, p.l2_bytes, p.l1_bytes) if p.flops and moved]
    low, high = (min(found), max(found)) if found else (1e-2, 1e3)
    return np.logspace(np.floor(np.log10(low)) - 1, np.ceil(np.log10(high)) + 1, 200)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v]
    return sum(known) / len(known) if known else None


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%} of roof"
