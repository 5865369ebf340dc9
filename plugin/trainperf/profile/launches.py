"""Kernel launches of the marked iteration, from nsys's stats reports or a torch.profiler trace
(``measure.torch_trace``), and
the tables built from them: per-kernel totals, the Top-5, the phase each ran in, a bottleneck verdict.

Pure: pandas and json only. A kernel's phase is the phase range (data, forward, backward,
optimizer) that contains the host call that launched it, on any thread (autograd launches the
backward kernels from its own threads).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trainperf.measure.torch_trace import Capture, ProfileFormatError, short_name

PHASES = ("data", "forward", "backward", "optimizer")
TOP = 5


STATS_REPORTS = ("cuda_kern_exec_trace", "nvtx_pushpop_trace")  # the nsys stats reports read_nsys_stats reads
KERNEL_COLUMNS = ("Kernel Start (ns)", "Kernel Dur (ns)", "API Start (ns)", "GridXYZ", "BlockXYZ", "Kernel Name")
RANGE_COLUMNS = ("Start (ns)", "End (ns)", "Name")


def stats_table(prefix: Path, report: str) -> Path:
    """Where ``nsys stats --format csv --output PREFIX`` writes one report."""
    return Path(f"{prefix}_{report}.csv")


def read_nsys_stats(prefix: Path) -> Capture:
    """Launches and NVTX push/pop ranges from ``nsys stats --report cuda_kern_exec_trace,nvtx_pushpop_trace
    --format csv --output PREFIX``: ``PREFIX_cuda_kern_exec_trace.csv`` (each kernel, with the host call
    that launched it; a graph's kernels with its launch) and ``PREFIX_nvtx_pushpop_trace.csv``."""
    kernels = _stats_report(prefix, STATS_REPORTS[0], KERNEL_COLUMNS)
    source = stats_table(prefix, STATS_REPORTS[0])
    names = kernels["Kernel Name"]
    if names.isna().any():
        raise ProfileFormatError(f"{source}: a kernel has no name")
    launches = pd.DataFrame(
        {
            "start": kernels["Kernel Start (ns)"],
            "end": kernels["Kernel Dur (ns)"],  # a duration until it is a number
            "name": names,
            "short": names.map(short_name),
            "mangled": None,
            "launch": kernels["API Start (ns)"],
            "grid": kernels["GridXYZ"].map(_xyz),
            "block": kernels["BlockXYZ"].map(_xyz),
            "registers": float("nan"),
        }
    )
    _numeric(source, "kernel", launches, required=("start", "end"), optional=("launch",))
    launches["end"] += launches["start"]
    pushed = _stats_report(prefix, STATS_REPORTS[1], RANGE_COLUMNS)
    if pushed["Name"].isna().any():
        raise ProfileFormatError(f"{stats_table(prefix, STATS_REPORTS[1])}: an NVTX range has no name")
    ranges = pd.DataFrame(
        {"name": pushed["Name"].str.split(":", n=1).str[-1], "start": pushed["Start (ns)"], "end": pushed["End (ns)"]}
    )  # "domain:name", the domain empty for NVTX's default one
    _numeric(stats_table(prefix, STATS_REPORTS[1]), "NVTX range", ranges, required=("start", "end"))
    return Capture(launches, ranges, str(source))


def _stats_report(prefix: Path, report: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """One ``nsys stats`` CSV as text; a ProfileFormatError naming the file when it is missing or lacks a
    column the reader needs (nsys writes none for a report whose data the capture does not hold)."""
    path = stats_table(prefix, report)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise ProfileFormatError(f"{path}: missing: nsys stats wrote no {report} report (no such data?)") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ProfileFormatError(f"{path}: not an nsys stats {report} CSV ({error})") from None
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ProfileFormatError(f"{path}: not an nsys stats {report} CSV: no {missing}")
    return frame.astype(object).where(frame.notna() & (frame != ""), None)  # a short row's cells too


def _xyz(text: str | None) -> str | None:
    """``'  18    1    1'`` -> ``'(18, 1, 1)'``, as ncu and the torch.profiler trace give a grid or block."""
    return None if text is None else "(" + ", ".join(str(text).split()) + ")"


def _numeric(
    path: Path, what: str, frame: pd.DataFrame, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> None:
    """The frame's time columns as numbers, in place: a missing required time or a time that is not a
    number is a ProfileFormatError naming the column."""
    for column in (*required, *optional):
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.isna().sum() > frame[column].isna().sum() or (column in required and numbers.isna().any()):
            raise ProfileFormatError(f"{path}: a {what} has a {column} time that is missing or not a number")
        frame[column] = numbers.astype("float64")


def iteration_launches(capture: Capture) -> pd.DataFrame:
    """The launches of the marked iteration, each with its duration and phase."""
    begin, end = capture.iteration
    launches = capture.launches.copy()
    when = launches["launch"].fillna(launches["start"])
    launches = launches[(when >= begin) & (when <= end)].copy()
    launches["duration"] = launches["end"] - launches["start"]
    launches["phase"] = [_phase_of(t, capture.ranges) for t in launches["launch"].fillna(launches["start"])]
    return launches


def _phase_of(time: float, ranges: pd.DataFrame) -> str:
    inside = ranges[ranges["name"].isin(PHASES) & (ranges["start"] <= time) & (ranges["end"] >= time)]
    if inside.empty:
        return "other"
    return str(inside.sort_values("start").iloc[-1]["name"])


def kernel_table(launches: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: short and full name, calls, total GPU ns, share of the iteration's kernel time,
    and the phase where most of its time went; sorted by total time."""
    if launches.empty:
        return pd.DataFrame(columns=["short", "name", "mangled", "calls", "total_ns", "share", "phase"])
    by_phase = launches.groupby(["name", "phase"])["duration"].sum().reset_index()
    main_phase = by_phase.sort_values("duration").groupby("name")["phase"].last()
    table = launches.groupby("name").agg(
        short=("short", "first"), mangled=("mangled", "first"), calls=("duration", "size"), total_ns=("duration", "sum")
    )
    table["share"] = table["total_ns"] / table["total_ns"].sum()
    table["phase"] = main_phase
    return table.reset_index().sort_values("total_ns", ascending=False, ignore_index=True)[
        ["short", "name", "mangled", "calls", "total_ns", "share", "phase"]
    ]


def top_kernels(table: pd.DataFrame, count: int = TOP) -> pd.DataFrame:
    return table.head(count).reset_index(drop=True)


def launch_configs(launches: pd.DataFrame, names: pd.Series) -> pd.DataFrame:
    """The distinct (name, short, grid, block, registers per thread) launch configurations of the kernels named."""
    chosen = launches[launches["name"].isin(set(names))]
    return chosen[["name", "short", "grid", "block", "registers"]].drop_duplicates().reset_index(drop=True)


@dataclass(frozen=True)
class Bottleneck:
    gpu_busy: float  # share of the iteration during which some kernel ran
    kernels: int
    median_kernel_us: float
    data_wait: float | None  # reader_cost / batch_cost, from the timed run
    verdict: str  # "GPU-bound", "CPU/launch-bound" or "I/O-bound"
    reason: str


def bottleneck(
    capture: Capture, launches: pd.DataFrame, data_wait: float | None = None, timed_ms: float | None = None
) -> Bottleneck:
    """GPU-busy share of the iteration; a large data wait while the GPU idles is I/O-bound, a GPU idle
    between many short kernels is CPU/launch-bound, else GPU-bound: a wait for data that overlapped a
    busy GPU (a batch decoded on the device waits for it) is named, not blamed on the loader. The share
    is the marked iteration's kernel time over the timed run's median iteration when known
    (``timed_ms``): the marked iteration ends in a synchronize and carries the profiler's own host work,
    which stretch an iteration of a few short launches that the timed loop queues back to back; else
    over the marked iteration."""
    begin, end = capture.iteration
    busy = _union_ns(launches["start"].clip(begin, end), launches["end"].clip(begin, end))
    span = timed_ms * 1e6 if timed_ms else end - begin
    share = min(1.0, busy / span) if span > 0 else 0.0
    median_us = float(launches["duration"].median() / 1e3) if len(launches) else 0.0
    busy_text = f"GPU busy {share:.0%} of the {'timed ' if timed_ms else ''}iteration"
    waited = data_wait is not None and data_wait > 0.25
    if waited and share < 0.7:
        verdict, reason = "I/O-bound", f"the host waited for data {data_wait:.0%} of the iteration: more loader workers"
    elif share < 0.7:
        verdict = "CPU/launch-bound"
        reason = f"{busy_text}, median kernel {median_us:.1f} us: fewer, larger kernels (compile, CUDA graphs)"
    elif waited:
        verdict = "GPU-bound"
        reason = f"{busy_text}, while the host waited for data {data_wait:.0%} of it: the wait overlapped GPU work"
    else:
        verdict, reason = "GPU-bound", f"{busy_text}: speed up the top kernels"
    return Bottleneck(share, len(launches), median_us, data_wait, verdict, reason)


def _union_ns(starts: pd.Series, ends: pd.Series) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(zip(starts, ends, strict=True)):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total
