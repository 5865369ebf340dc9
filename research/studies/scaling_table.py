"""Compare the two timed runs of ``research/studies/gpu_scaling.sh``, as Markdown: wall times, and per case its time
on one GPU against its time on its worker's GPU.

    python research/studies/scaling_table.py FOLDER

FOLDER is one unpacked ``gpu_scaling.sh`` run: ``walls.txt``, ``one_gpu/run.json``, and ``workers/``
with the merged ``run.json`` and each worker's ``run-gwK.json``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd
import trainperf

WALL = re.compile(r"^(?P<label>\w+): exit (?P<status>\d+) in (?P<seconds>\d+) s: (?P<outcome>.*)$")


def walls(folder: Path) -> pd.DataFrame:
    """One row per pytest run of the script: label, exit status, wall seconds and pytest's last line."""
    lines = (folder / "walls.txt").read_text(encoding="utf-8").splitlines()
    rows = [match.groupdict() for match in map(WALL.match, lines) if match]
    return pd.DataFrame(rows).astype({"status": int, "seconds": int})


def cases(path: Path, worker: str = "") -> pd.DataFrame:
    """Per case of one run document: median and IQR, profiling seconds and verdict."""
    frame = trainperf.read_run(path)[["case", "median_ms", "iqr_ms", "verdict"]]
    cases = json.loads(path.read_text(encoding="utf-8"))["benchmarks"]
    frame["profile_s"] = [(case["extra_info"].get("profile") or {}).get("seconds") for case in cases]
    return frame.assign(worker=worker)


def per_case(folder: Path) -> pd.DataFrame:
    one = cases(folder / "one_gpu" / "run.json")
    spread = pd.concat(
        cases(path, path.stem.removeprefix("run-")) for path in sorted((folder / "workers").glob("run-gw*.json"))
    )
    table = one.merge(spread, on="case", suffixes=("_one", "_workers"))
    table["difference"] = table["median_ms_workers"] / table["median_ms_one"] - 1.0
    return table


def spread(table: pd.DataFrame, run: str) -> pd.Series:
    """``median ± IQR`` of one run's columns, as text."""
    return table[f"median_ms_{run}"].map("{:.2f}".format) + " ± " + table[f"iqr_ms_{run}"].map("{:.2f}".format)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    runs = walls(folder)
    print(runs.to_markdown(index=False))
    seconds = dict(zip(runs["label"], runs["seconds"], strict=True))
    if {"one_gpu", "workers"} <= seconds.keys():
        print(f"\nworkers / one GPU: {seconds['workers'] / seconds['one_gpu']:.2f}x the wall time\n")
    table = per_case(folder)
    shown = pd.DataFrame(
        {
            "case": table["case"],
            "one GPU: median ± IQR ms": spread(table, "one"),
            "worker: median ± IQR ms": spread(table, "workers") + " (" + table["worker_workers"] + ")",
            "difference": table["difference"].map("{:+.1%}".format),
            "profile s, one GPU": table["profile_s_one"].round(1),
            "profile s, worker": table["profile_s_workers"].round(1),
            "verdicts": table["verdict_one"] + " / " + table["verdict_workers"],
        }
    )
    print(shown.to_markdown(index=False))
    close = (table["difference"].abs() <= 0.02).sum()
    print(f"\n{close} of {len(table)} cases within 2% of their one-GPU median")


if __name__ == "__main__":
    main()
