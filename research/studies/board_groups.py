"""Where a case's stored runs split by the GPU board's part number:
``python research/studies/board_groups.py BASELINE.json``.

The gate judges every machine of a device against one center. On H200s the board part told the kernels'
fast machines from the slow ones (research/evidence/h200-gpu-bound-noise.md): on a board whose runs sit
under the center, a slowdown reads smaller and may pass. This lists, per case and part with at least
``stats.MIN_RUNS`` stored runs (recorded or accepted since): how far those runs sit from the center;
whether they stand apart from the case's other runs, of other parts or of none kept (Welch's t-test);
what a slowdown of ``SLOWDOWN`` would read as there, and whether that reading passes the case's
threshold. A fleet whose boards split can keep a baseline folder per part (``--baseline-dir``), each
recorded on its part.

Pure: no torch, no pytest.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from trainperf.judge import checks, stats
from trainperf.store import baselines

SLOWDOWN = 0.05  # the slowdown the gate is to catch in a GPU-bound case, nine times in ten
APART_P = 0.01  # a part's runs stand apart from the case's others below this p-value
COLUMNS = [
    "case", "board part", "runs", "against center", "part spread", "p", "5% reads", "detects", "5% caught", "apart",
]  # fmt: skip


def board_frame(cases: Mapping[str, Mapping[str, Any]], floor: float = checks.DEFAULT_FLOOR) -> pd.DataFrame:
    """One row per case and board part with at least ``stats.MIN_RUNS`` stored runs, most apart first."""
    rows = [row for name, entry in cases.items() for row in _rows(name, entry, floor)]
    frame = pd.DataFrame(rows, columns=COLUMNS[:-2])
    frame = frame.assign(**{"5% caught": frame["5% reads"] > frame["detects"], "apart": frame["p"] < APART_P})
    return frame.sort_values(["p", "case", "board part"], kind="stable", ignore_index=True)


def _rows(name: str, entry: Mapping[str, Any], floor: float) -> list[list[Any]]:
    stored = baselines.stored_baseline(entry)
    noise = stored.noise(floor)
    recorded_on = entry.get("fingerprint", {}).get("board_part_number")  # absent from older recordings
    runs = [*stored.run_medians_ms, *stored.history_ms]
    parts = [recorded_on] * len(stored.run_medians_ms) + baselines.history_boards(entry)
    rows = []
    for part in sorted({part for part in parts if part is not None}):
        own = [run for run, board in zip(runs, parts, strict=True) if board == part]
        rest = [run for run, board in zip(runs, parts, strict=True) if board != part]
        if len(own) < stats.MIN_RUNS:
            continue
        mean = statistics.fmean(own)
        offset = stats.relative_change(mean, noise.center_ms)
        spread = statistics.stdev(own, xbar=mean) / mean
        p = stats.apart_p_value(own, rest)
        reads = (1 + SLOWDOWN) * (1 + offset) - 1
        rows.append([name, part, len(own), offset, spread, 1.0 if p is None else p, reads, noise.threshold])
    return rows


def render(frame: pd.DataFrame) -> str:
    """The parts whose runs stand apart, as text, after a line that counts them."""
    apart = frame[frame["apart"]]
    head = (
        f"{len(frame)} board part group(s) of at least {stats.MIN_RUNS} stored runs; {len(apart)} apart from "
        f"their case's other runs (Welch, p < {APART_P}); '5% reads' is what a run slowed 5% on that part "
        "reads against the center"
    )
    if apart.empty:
        return head
    shown = apart.drop(columns="apart").assign(
        **{
            "against center": apart["against center"].map(lambda v: f"{v:+.2%}"),
            "part spread": apart["part spread"].map(lambda v: f"{v:.2%}"),
            "p": apart["p"].map(lambda v: f"{v:.1e}"),
            "5% reads": apart["5% reads"].map(lambda v: f"{v:+.1%}"),
            "detects": apart["detects"].map(lambda v: f"{v:.1%}"),
            "5% caught": apart["5% caught"].map({True: "yes", False: "no"}),
        }
    )
    return head + "\n" + shown.to_string(index=False)


def main(argv: Sequence[str]) -> int:
    """Print a baseline file's board part groups: a line naming the file, then ``render``'s lines."""
    path = Path(argv[0])
    cases = baselines.load(path)
    print(f"{path}: {len(cases)} case(s)")
    print(render(board_frame(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
