"""One-line notes a case adds to the summary, read from its run-document entry, and the line a
night's bisection gives each of its failed cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainperf.record.result import CPU_BACKEND, CaseEntry


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


def profile_heading(profile: Mapping[str, Any]) -> str:
    """What a profile covers, its tool and what it cost, where the cost is a share of a child that profiled
    several cases: the heading of its Top-5 in the terminal and the report."""
    heading = (
        f"Top-5 {profile['unit']}s of one iteration ({profile['iteration_ms']:.2f} ms), {profile['tool']}, "
        f"{profile['seconds']:.0f} s to profile"
    )
    if profile.get("batch", 1) > 1:
        heading += f" (its part of {profile['batch']} cases profiled together)"
    return heading


SCALING = {
    "strong": "the processes split the reference's batch",
    "weak": "each process keeps the reference's batch",
    "other": "the batch per process differs from the reference's",
}


def communication_line(entry: CaseEntry, entries: Sequence[CaseEntry] = ()) -> str:
    """A data-parallel case: processes, peak memory per GPU (against plain DDP's among ``entries``, the
    run's cases so far), scaling, all-reduce bandwidth, hidden communication."""
    info = entry["extra_info"]
    figures = info["communication"] or {}
    processes = figures.get("processes", 1)
    parts = [f"{entry['name']}: {processes} {figures.get('backend', '')} processes"]
    if info.get("peak_memory_bytes"):
        parts.append(_peak_per_gpu(entry, plain_ddp(entries, entry["name"].split("/")[0])))
    scaling = info.get("scaling")
    if scaling is not None:
        parts.append(
            f"{scaling['kind']} scaling efficiency {scaling['efficiency']:.0%} of the single-process reference "
            f"({SCALING[scaling['kind']]})"
        )
    elif figures.get("backend") == CPU_BACKEND:
        parts.append("no scaling efficiency: CPU processes share this machine's cores")
    if figures.get("all_reduce_busbw_gbs") is not None:
        parts.append(f"all-reduce bus bandwidth {figures['all_reduce_busbw_gbs']:.1f} GB/s")
    if figures.get("hidden_share") is not None:
        parts.append(
            f"{figures['hidden_share']:.0%} of {figures['communication_ms']:.2f} ms communication hidden behind compute"
        )
    return ", ".join(parts)


def plain_ddp(entries: Sequence[CaseEntry], workload: str) -> CaseEntry | None:
    """The workload's case with DDP's defaults (``ddp={}``, one micro-batch): what sharding is held to."""
    for other in entries:
        knobs = other["extra_info"].get("knobs") or {}
        if other["name"].split("/")[0] == workload and knobs.get("ddp") == {} and "accumulation_steps" not in knobs:
            return other
    return None


def _peak_per_gpu(entry: CaseEntry, ddp: CaseEntry | None) -> str:
    peak = entry["extra_info"]["peak_memory_bytes"]
    text = f"peak {peak / 2**20:,.0f} MiB per GPU"
    if ddp is None or ddp is entry or not ddp["extra_info"].get("peak_memory_bytes"):
        return text
    return text + f" ({peak / ddp['extra_info']['peak_memory_bytes']:.2f}x {ddp['name'].split('/', 1)[1]}'s)"


def culprit_line(found: dict[str, Any]) -> str:
    """'`gpt2/compile`: +1 synchronization..., first at `abc1234` 'Log the loss', 4 steps, 3 min'."""
    name = found.get("case") or found["node"]
    if not found["found"]:
        return f"`{name}`: no culprit found ({found.get('reason') or 'its work at this commit is as recorded'})"
    minutes = found["seconds"] / 60
    spent = f"{found['steps']} steps, " + (f"{minutes:.0f} min" if minutes >= 1 else f"{found['seconds']:.0f} s")
    return f"`{name}`: {found['moved']}, first at `{found['commit'][:9]}` '{found['subject']}', {spent}"
