"""One-line notes a case adds to the summary, read from its run-document entry."""

from __future__ import annotations

from trainperf.report.document import CaseEntry


def training_log_line(entry: CaseEntry) -> str:
    """An image case the way a training log shows it: seconds per batch, of which waiting for data,
    and images per second."""
    info = entry["extra_info"]
    batch_cost = info["summary_ms"]["median"] / 1000.0
    reader_cost = info["reader_share"] * batch_cost
    return (
        f"{entry['name']}: batch_cost {batch_cost:.4f} s, reader_cost {reader_cost:.4f} s "
        f"({info['reader_share']:.1%}), ips {info['samples_per_second']:,.1f} {info['sample_unit']}/s"
    )


def communication_line(entry: CaseEntry) -> str:
    """A data-parallel case: processes, scaling, all-reduce bandwidth, hidden communication."""
    info = entry["extra_info"]
    figures = info["communication"] or {}
    processes = figures.get("processes", 1)
    parts = [f"{entry['name']}: {processes} {figures.get('backend', '')} processes"]
    if info["speedup"] is not None:
        parts.append(f"scaling efficiency {info['speedup'] / processes:.0%} of the single-process reference")
    if figures.get("all_reduce_busbw_gbs") is not None:
        parts.append(f"all-reduce bus bandwidth {figures['all_reduce_busbw_gbs']:.1f} GB/s")
    if figures.get("hidden_share") is not None:
        parts.append(
            f"{figures['hidden_share']:.0%} of {figures['communication_ms']:.2f} ms communication hidden behind compute"
        )
    return ", ".join(parts)
