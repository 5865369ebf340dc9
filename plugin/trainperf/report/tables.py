"""The two tables every report shows, built once from run-document entries: the cases table and a
case's Top-5. The terminal, pytest-html, HTML and Markdown pages print these as they are."""

from __future__ import annotations

from typing import Any

import pandas as pd

from trainperf.report.escape import markdown_text
from trainperf.report.units import rate_text


def display_cases(frame: pd.DataFrame) -> pd.DataFrame:
    """The cases table as text (``document.cases_frame`` gives the figures): median ± IQR, baseline, the
    slowdown beyond which the gate fails the case at its measured noise (``threshold``) and the one it
    catches nine times in ten, speedup, throughput, MFU, data wait, accuracy, memory, compile time,
    verdict; without the columns no case fills (a first run has no baseline, a CPU no kernels).
    ``LEGEND`` says what the short headers mean."""
    table = pd.DataFrame(
        {
            "case": frame["case"],
            "ms/iter (± IQR)": [f"{m:.3f} ± {q:.3f}" for m, q in zip(frame["median_ms"], frame["iqr_ms"], strict=True)],
            "baseline ms": ["" if pd.isna(v) else f"{v:.3f}" for v in frame["baseline_ms"]],
            "vs baseline": ["" if pd.isna(v) else f"{v:+.1%}" for v in frame["delta"]],
            "threshold": [
                detects_text(t, w, k)
                for t, w, k in zip(
                    frame["min_detectable"],
                    frame["min_detectable_host_work"],
                    frame["min_detectable_kernel_time"],
                    strict=True,
                )
            ],
            "caught 9/10": [percent(v) for v in frame["caught_9_in_10"]],
            "speedup": ["" if pd.isna(s) else f"{s:.2f}x" for s in frame["speedup"]],
            "throughput/s": [rate_text(v, u) for v, u in zip(frame["per_second"], frame["unit"], strict=True)],
            "MFU": [mfu_text(m, f) for m, f in zip(frame["mfu"], frame["fp8_share"], strict=True)],
            "reader": [percent(v, digits=0) for v in frame["reader_share"]],
            "ops/syncs": [work_text(o, s, "{:.0f}/{:.0f}") for o, s in zip(frame["ops"], frame["syncs"], strict=True)],
            "kernels (ms)": [
                work_text(k, m, "{:.0f} ({:.2f})") for k, m in zip(frame["kernels"], frame["kernel_ms"], strict=True)
            ],
            "accuracy": [f"{n} {v:.4f}" for n, v in zip(frame["metric"], frame["metric_value"], strict=True)],
            "peak MiB": ["" if pd.isna(v) else f"{v:,.0f}" for v in frame["peak_mib"]],
            "1st iter s": ["" if pd.isna(v) else f"{v:.1f}" for v in frame["first_step_s"]],
            "verdict": frame["verdict"],
        }
    )
    return table[[column for column in table if table[column].astype(bool).any()]]


def top_table(rows: list[dict[str, Any]], unit: str, full_names: bool = True) -> pd.DataFrame:
    """The Top-5 as text (a profile entry's ``top`` rows); with ``full_names`` a last column of the full
    kernel names (they hold ``<``, ``>`` and ``&``: escape them in HTML)."""
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
        table["% of roof"] = [percent(r.get("roof_share"), digits=0) for r in rows]
    if full_names:
        table["full name"] = [row["name"] for row in rows]
    return table


# what the summary's short headers mean, printed under the table for the columns it shows
LEGEND = {
    "threshold": "the slowdown against the baseline beyond which the case fails, at its measured noise "
    "(host: the rise in host calls per iteration, where the GPU waits for the host; kernels: the rise in GPU "
    "kernel time per iteration)",
    "caught 9/10": "the slowdown caught nine times in ten",
    "speedup": "throughput (samples/s) over the workload's reference case in this run, so cases of other "
    "batch sizes compare",
    "reader": "share of the iteration spent waiting for data",
    "ops/syncs": "ATen ops and host-device synchronizations per iteration, counted",
    "kernels (ms)": "GPU kernels per iteration and their summed time",
}


def detects_text(slowdown: float | None, host_work: float | None, kernel_time: float | None = None) -> str:
    """'36.3%', then '; host +3.0%' for a case also judged on its host calls per iteration and '; kernels
    +3.0%' for one judged on its GPU kernel time ('host +3.0%' alone where its time is not judged)."""
    parts = [percent(slowdown)]
    for name, rise in (("host", host_work), ("kernels", kernel_time)):
        if rise is not None and not pd.isna(rise):
            parts.append(f"{name} +{rise:.1%}")
    return "; ".join(part for part in parts if part)


def work_text(count: float | None, second: float | None, form: str) -> str:
    """Two counted figures in ``form`` ('1157/8' for ops and synchronizations, '600 (12.76)' for kernels
    and their ms); blank where none were counted (a data-parallel rank, a document written before)."""
    if count is None or pd.isna(count) or second is None or pd.isna(second):
        return ""
    return form.format(count, second)


def mfu_text(mfu: float | None, fp8_share: float | None) -> str:
    """MFU, always against the dense bf16 peak; an FP8 case adds its share of FLOPs in FP8 GEMMs."""
    if fp8_share is None or pd.isna(fp8_share):
        return percent(mfu)
    return f"{percent(mfu)} (bf16 peak; FP8 {fp8_share:.0%} of FLOPs)"


def percent(value: float | None, digits: int = 1) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.{digits}%}"


def markdown_table(frame: pd.DataFrame) -> str:
    """A Markdown table of the frame, every cell escaped and shown as formatted (missing: blank)."""
    cells = frame.map(lambda value: markdown_text(cell_text(value)))
    return str(cells.to_markdown(index=False, disable_numparse=True))


def cell_text(value: object) -> str:
    """A table cell as text: blank for a missing figure."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
