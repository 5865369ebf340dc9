"""A baseline file's stored runs judged again: each history run against the recorded runs and the part of
the history stored before it, as the gate would judge it had the runs come one at a time in the file's
order. The history holds runs of the recorded code, so every run the replay fails is a false failure of
that rule.

    python research/studies/replay_history.py baselines/nvidia-h200.json [--iteration-floor-until K] [--median-center]

``--iteration-floor-until K`` replays a variant of the rule: the iterations' spread within a run stops
counting as the least noise once K later runs are in the history, so that their measured spread alone
decides. ``--median-center`` another: the recorded runs' median is the center, so that one recorded
run off the others does not move it. Prints the failures and a table per case;
research/evidence/h200-gpu-bound-noise.md and trust.md hold what it found. A history run with fewer than
``stats.MIN_RUNS`` runs before it is judged at the fallback threshold alone: the replay has its median,
not its iterations for Mann-Whitney U.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from trainperf.judge import checks, stats
from trainperf.store import baselines

NEVER = sys.maxsize  # the rule as the gate has it: the iterations' spread always counts
COLUMNS = ["case", "run", "change", "threshold", "failed"]


def replay_entry(
    case: str, entry: Mapping[str, Any], floor_until: int = NEVER, median_center: bool = False
) -> pd.DataFrame:
    """One row per history run of ``entry``: its change against the recorded center, the threshold of the
    runs before it under the rule, and whether it fails."""
    recorded = baselines.run_medians(entry)
    history = baselines.history(entry)
    least = checks.Baseline(entry["samples_ms"], recorded).iteration_spread  # the gate's least noise
    center = statistics.median if median_center else statistics.mean
    rows = []
    for index, median in enumerate(history):
        least_noise = least if index < floor_until else 0.0
        noise = stats.run_noise(
            recorded, checks.DEFAULT_FLOOR, checks.FALLBACK_THRESHOLD, least_noise, history[:index], center
        )
        change = stats.relative_change(median, noise.center_ms)
        rows.append({"case": case, "run": index, "change": change, "threshold": noise.threshold})
    frame = pd.DataFrame(rows, columns=COLUMNS[:-1])
    return frame.assign(failed=frame["change"] > frame["threshold"])


def replay(
    cases: Mapping[str, Mapping[str, Any]], floor_until: int = NEVER, median_center: bool = False
) -> pd.DataFrame:
    """Every history run of every case, in the file's order (no rows where no case has a history)."""
    frames = [replay_entry(case, entry, floor_until, median_center) for case, entry in cases.items()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def per_case(runs: pd.DataFrame) -> pd.DataFrame:
    """Per case: runs judged, false failures, the highest share of its threshold a run used, the threshold
    that judged its last run."""
    grouped = runs.assign(used=runs["change"] / runs["threshold"]).groupby("case", sort=False)
    return pd.DataFrame(
        {
            "runs": grouped.size(),
            "failed": grouped["failed"].sum(),
            "most_used": grouped["used"].max(),
            "last_judged_at": grouped["threshold"].last(),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("baseline_file", type=Path)
    parser.add_argument("--iteration-floor-until", type=int, default=NEVER, metavar="K")
    parser.add_argument("--median-center", action="store_true", help="the recorded runs' median as the center")
    args = parser.parse_args(argv)
    try:
        cases = baselines.load(args.baseline_file)
    except baselines.BaselineError as error:
        print(f"replay_history: {error}", file=sys.stderr)
        return 2
    runs = replay(cases, args.iteration_floor_until, args.median_center)
    if runs.empty:
        print(f"replay_history: no case of {args.baseline_file} has a history to replay", file=sys.stderr)
        return 1
    failed = runs[runs["failed"]]
    print(f"{len(runs)} stored runs of {runs['case'].nunique()} cases judged again: {len(failed)} would fail")
    if not failed.empty:
        print(failed.to_string(index=False, float_format=lambda v: f"{v:.1%}"))
    print(per_case(runs).to_markdown(floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
