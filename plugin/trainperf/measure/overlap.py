"""How much of a data-parallel iteration's communication hides behind its computation. Pure: pandas only.

Communication kernels are NCCL's (``nccl`` in the name); everything else on the GPU is computation.
The hidden share is the time NCCL kernels ran while some computation kernel ran too, over all the
time NCCL kernels ran.
"""

from __future__ import annotations

import pandas as pd


def is_communication(names: pd.Series) -> pd.Series:
    return names.str.contains("nccl", case=False, regex=False)


def merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Disjoint, sorted intervals covering the same time."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def covered(interval: tuple[float, float], cover: list[tuple[float, float]]) -> float:
    """Time of ``interval`` that the disjoint ``cover`` overlaps."""
    start, end = interval
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in cover)


def hidden_communication(launches: pd.DataFrame) -> tuple[float, float] | None:
    """(communication ns, share of it hidden behind computation) of kernel ``launches`` (name, start,
    end); None when no communication kernel ran."""
    communication = is_communication(launches["name"].astype(str))
    comm = merged(list(zip(launches.loc[communication, "start"], launches.loc[communication, "end"], strict=True)))
    if not comm:
        return None
    compute = merged(list(zip(launches.loc[~communication, "start"], launches.loc[~communication, "end"], strict=True)))
    total = sum(end - start for start, end in comm)
    hidden = sum(covered(interval, compute) for interval in comm)
    return total, hidden / total if total else 0.0
