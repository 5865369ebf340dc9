"""A torch.profiler chrome trace read into its kernel launches and host ranges (``Capture``): what the
counting pass, a data-parallel rank's overlap and the profilers' Top-5 read a marked iteration from.

Pure: pandas and json only. On a CPU, where a trace has no kernels, its innermost operators stand in.
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

from trainperf.measure.marks import MARK


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
