"""Kernel launches of the marked iteration, from nsys's stats reports or a torch.profiler trace, and
the tables built from them: per-kernel totals, the Top-5, the phase each ran in, a bottleneck verdict.

Pure: pandas and json only. A kernel's phase is the phase range (data, forward, backward,
optimizer) that contains the host call that launched it, on any thread (autograd launches the
backward kernels from its own threads).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from trainperf.profile.child import MARK

PHASES = ("data", "forward", "backward", "optimizer")
TOP = 5


class ProfileFormatError(ValueError):
    """A profiler output that cannot be read; the message names the file and what is missing."""


@dataclass(frozen=True)
class Capture:
    """Kernel launches (name, short, start, end, launch in ns) and host ranges (name, start, end)."""

    launches: pd.DataFrame
    ranges: pd.DataFrame
    source: str
    unit: str = "kernel"  # "operator" when a CPU run's trace has no kernels: its innermost operators

    @property
    def iteration(self) -> tuple[float, float]:
        """(start, end) of the marked iteration's range, ns."""
        marked = self.ranges[self.ranges["name"] == MARK]
        if marked.empty:
            raise ProfileFormatError(f"{self.source}: no '{MARK}' range: was the iteration marked?")
        return float(marked["start"].min()), float(marked["end"].max())


def short_name(full: str) -> str:
    """``void ns::kernel_name<...>(...)`` -> ``kernel_name``; names without templates stay as they are."""
    head = re.sub(r"\(.*$", "", full.strip().replace("(anonymous namespace)", "anonymous"))
    depth, kept = 0, []
    for char in head:
        depth += char == "<"
        if depth == 0:
            kept.append(char)
        depth -= char == ">"
    words = "".join(kept).split()
    return words[-1].split("::")[-1] if words else full


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


def read_torch_trace(path: Path) -> Capture:
    """Launches and ``record_function`` ranges from a torch.profiler chrome trace (``.json`` or ``.json.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            events = json.load(handle)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ProfileFormatError(f"{path}: not a torch.profiler chrome trace ({error})") from None
    _check_events(path, events)
    launch_times = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    kernel_events = [e for e in events if e.get("cat") == "kernel"]
    unit = "kernel" if kernel_events else "operator"
    rows = [
        _torch_row(e, launch_times.get(e.get("args", {}).get("correlation"), float("nan")))
        for e in kernel_events or _innermost_operators(events)
    ]
    ranges = [
        {"name": e["name"], "start": e["ts"] * 1e3, "end": (e["ts"] + e["dur"]) * 1e3}
        for e in events
        if e.get("cat") == "user_annotation"
    ]
    columns = ["start", "end", "name", "short", "mangled", "launch", "grid", "block", "registers"]
    return Capture(
        pd.DataFrame(rows, columns=columns), pd.DataFrame(ranges, columns=["name", "start", "end"]), str(path), unit
    )


READ_CATEGORIES = ("kernel", "cuda_runtime", "cuda_driver", "user_annotation", "cpu_op")


def _check_events(path: Path, events: Any) -> None:
    """Every event the reader uses has its fields, of the types it reads them as; else a
    ProfileFormatError naming the event."""
    if not isinstance(events, list):
        raise ProfileFormatError(f"{path}: 'traceEvents' must be a list")
    for index, event in enumerate(events):
        problem = _event_problem(event)
        if problem is not None:
            raise ProfileFormatError(f"{path}: traceEvents[{index}] {problem}")


def _event_problem(event: Any) -> str | None:
    if not isinstance(event, dict):
        return "is not an object"
    if not isinstance(event.get("args", {}), dict):
        return "has 'args' that is not an object"
    if not isinstance(event.get("cat"), str) or event["cat"] not in READ_CATEGORIES:
        return None  # not read
    if not isinstance(event.get("name"), str):
        return f"({event['cat']}) needs a string 'name'"
    if not all(_finite(event.get(key)) for key in ("ts", "dur")):
        return f"({event['cat']}) needs numeric 'ts' and 'dur'"
    args = event.get("args", {})
    if "correlation" in args and not isinstance(args["correlation"], int | str):
        return f"({event['cat']}) has a 'correlation' that is neither a number nor a string"
    for key in ("grid", "block"):
        value = args.get(key)
        if value is not None and not (isinstance(value, list) and all(_finite(v) for v in value)):
            return f"({event['cat']}) has a '{key}' that is not a list of numbers"
    return None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _torch_row(event: dict[str, Any], launch_us: float) -> dict[str, Any]:
    start = event["ts"] * 1e3
    args = event.get("args", {})
    return {
        "start": start,
        "end": (event["ts"] + event["dur"]) * 1e3,
        "name": event["name"],
        "short": event["name"] if event.get("cat") == "cpu_op" else short_name(event["name"]),
        "mangled": None,
        "launch": start if event.get("cat") == "cpu_op" else launch_us * 1e3,
        "grid": _dims(args.get("grid")),
        "block": _dims(args.get("block")),
        "registers": args.get("registers per thread"),
    }


def _dims(value: Any) -> str | None:
    """[2, 66, 1] -> '(2, 66, 1)', as ncu and nsys write a launch's grid and block."""
    return None if value is None else "(" + ", ".join(str(int(v)) for v in value) + ")"


def _innermost_operators(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CPU operators that contain no other operator of their thread (their time is their own)."""
    operators = sorted(
        (e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (str(e.get("tid")), e["ts"], -e["dur"])
    )
    innermost = []
    for index, here in enumerate(operators):
        after = operators[index + 1] if index + 1 < len(operators) else None
        nested = after is not None and after.get("tid") == here.get("tid") and after["ts"] < here["ts"] + here["dur"]
        if not nested:
            innermost.append(here)
    return innermost


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
