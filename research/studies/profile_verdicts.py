"""Verdicts of profiled runs against the unprofiled runs of the same machine, case by case.

    PYTHONPATH=$PWD python research/studies/profile_verdicts.py RUN_JSON... [--append research/evidence/data/TABLE.csv]

Each RUN_JSON is one run document, named by its folder (``aa-HHMMSS``); a run is profiled where its
cases carry a profile (``--profile=ncu|nsys``), and its machine is the GPU's UUID. A profiled case-run
agrees when its verdict equals the verdict of every unprofiled run of that case on that machine.
Prints a Markdown table (a row per case and machine: each run's median against the baseline and its
verdict, unprofiled and profiled) and the count of agreeing case-runs; exits 1 where one disagrees or
has no unprofiled run to match.
With ``--append`` the case-runs are also appended to a table with this script's columns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd
from trainperf.record import document

from research.studies import evidence_rows

COLUMNS = ["machine", "run", "profiler", "case", "median_ms", "baseline_ms", "detects", "verdict", "profile_s"]
UNPROFILED = "none"


def profiler(case: dict[str, Any]) -> str:
    """The tool that gave the case's kernels (``ncu``, ``nsys``, ``torch.profiler``), or ``none``."""
    tool = (case["extra_info"].get("profile") or {}).get("tool")
    return tool.split(" + ")[-1].split()[0] if tool else UNPROFILED


def case_runs(run_documents: list[Path]) -> pd.DataFrame:
    """One row per case and run, in the table's columns; the machine is the GPU UUID's first 12 characters."""
    frames = []
    for path in run_documents:
        run = document.load(path)
        frame = document.cases_frame(run.cases)
        frame["machine"] = str(run.machine.get("gpu_uuid") or "unknown")[:12]
        frame["run"] = path.parent.name
        frame["profiler"] = [profiler(case) for case in run.cases]
        frame["detects"] = frame["min_detectable"]
        seconds = [(case["extra_info"].get("profile") or {}).get("seconds") for case in run.cases]
        frame["profile_s"] = pd.Series(seconds, dtype="float64")
        frames.append(frame)
    if not frames:
        raise SystemExit("no run document given")
    rows = pd.concat(frames, ignore_index=True)
    return rows.round({"median_ms": 4, "baseline_ms": 4, "detects": 4, "profile_s": 1})[COLUMNS]


def agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """The profiled case-runs, each with the unprofiled verdicts of its case and machine and ``agrees``."""
    unprofiled = rows[rows["profiler"] == UNPROFILED].groupby(["machine", "case"])["verdict"].agg(sorted)
    profiled = rows[rows["profiler"] != UNPROFILED].copy()
    keys = zip(profiled["machine"], profiled["case"], strict=True)
    profiled["unprofiled"] = [unprofiled.get(key, []) for key in keys]
    profiled["agrees"] = [
        bool(found) and set(found) == {verdict}
        for found, verdict in zip(profiled["unprofiled"], profiled["verdict"], strict=True)
    ]
    return profiled


def markdown(rows: pd.DataFrame, checked: pd.DataFrame) -> str:
    """A row per case and machine: the unprofiled and the profiled runs' cells (``+1.2% pass``, in the
    runs' order) and how many profiled case-runs agree."""
    change = (rows["median_ms"] / rows["baseline_ms"] - 1).map(lambda value: f"{value:+.1%}", na_action="ignore")
    cells = rows.assign(cell=change.fillna("no baseline") + " " + rows["verdict"]).sort_values("run", kind="stable")
    profiled = cells["profiler"] != UNPROFILED
    groups = ["case", "machine"]
    table = pd.DataFrame(
        {
            "unprofiled": cells[~profiled].groupby(groups)["cell"].agg(", ".join),
            "profiled": cells[profiled].groupby(groups)["cell"].agg(", ".join),
            "agree": checked.groupby(groups)["agrees"].agg(lambda found: f"{found.sum()} of {len(found)}"),
        }
    )
    order = rows[groups].drop_duplicates().set_index(groups).index
    return table.reindex(order).dropna(subset=["profiled"]).fillna("").reset_index().to_markdown(index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_documents", nargs="+", type=Path, metavar="RUN_JSON")
    parser.add_argument("--append", type=Path, help="the table to append to; it must exist with this header")
    args = parser.parse_args(argv)
    rows = case_runs(args.run_documents)
    checked = agreement(rows)
    if checked.empty:
        print("no profiled run among them: nothing to compare", file=sys.stderr)
        return 1
    print(markdown(rows, checked))
    print(f"\n{int(checked['agrees'].sum())} of {len(checked)} profiled case-runs agree with the unprofiled runs")
    for row in checked[~checked["agrees"]].to_dict("records"):
        found = ", ".join(row["unprofiled"]) or "no unprofiled run on this machine"
        where = f"{row['machine']} {row['run']} {row['case']}"
        print(f"{where}: {row['verdict']} under {row['profiler']}, unprofiled: {found}")
    if args.append is not None:
        evidence_rows.write(rows, COLUMNS, args.append)
    return 0 if checked["agrees"].all() else 1


if __name__ == "__main__":
    sys.exit(main())
