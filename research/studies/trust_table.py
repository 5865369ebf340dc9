"""The A/A and detection tables of ``research/studies/trust_runs.sh``'s output, as Markdown.

    python research/studies/trust_table.py FOLDER... [--committed baselines/DEVICE.json]

Each FOLDER is one unpacked ``trust_runs.sh`` call: ``base/run.json`` (the run that recorded this
machine's baselines), ``aa-*/run.json`` (runs gated against them) and ``detection.xml``.
A/A: per case, the spread of the runs' medians (CV), their change against the recorded baseline and,
with ``--committed``, against the committed one, the lowest SM clock and the clock events seen while
the timed iterations ran, and how many runs the gate failed. Detection: per slowdown, how often the
gate caught it (and how many of those a second measurement upheld) and the slowdown it actually
gave, per case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import trainperf

CAUGHT = "slower than baseline"
CAUGHT_BY_HOST_WORK = "more host work than baseline"  # the host-work check of a case that waits for the host
UPHELD = "(first measurement:"  # a failure the gate measured again before failing it


def run_frame(path: Path, run: str) -> pd.DataFrame:
    """One row per case of the run document ``path``, named ``run``: its figures, the clocks and host
    steal while it was timed, the checks it failed and whether a second measurement upheld a failed time."""
    frame = trainperf.read_run(path).assign(run=run)
    cases = json.loads(path.read_text(encoding="utf-8"))["benchmarks"]
    during = [case["extra_info"].get("clocks", {}).get("during") or {} for case in cases]
    frame["min_sm_mhz"] = [reading.get("min_sm_clock_mhz") for reading in during]
    frame["mean_sm_mhz"] = [reading.get("mean_sm_clock_mhz") for reading in during]
    frame["events"] = [", ".join(reading.get("throttle", [])) or "none" for reading in during]
    frame["host_steal"] = [reading.get("host_steal_share") for reading in during]
    frame["thread_steal"] = [reading.get("thread_steal_share") for reading in during]
    frame["others_cpu"] = [reading.get("other_processes_share") for reading in during]
    checks = [case["extra_info"]["checks"] for case in cases]
    frame["failed"] = [", ".join(check["name"] for check in found if check["passed"] is False) for found in checks]
    frame["upheld"] = [
        any(c["name"] == "baseline" and c["passed"] is False and UPHELD in c["message"] for c in found)
        for found in checks
    ]
    return frame


def aa_frame(folders: list[Path]) -> pd.DataFrame:
    """One row per case and A/A run."""
    paths = sorted(path for folder in folders for path in folder.glob("aa-*/run.json"))
    if not paths:
        raise SystemExit(f"no aa-*/run.json under {', '.join(map(str, folders))}")
    return pd.concat(
        [run_frame(path, str(path.parent.relative_to(path.parents[2]))) for path in paths], ignore_index=True
    )


def aa_table(runs: pd.DataFrame, committed: dict[str, float]) -> pd.DataFrame:
    """Per case: runs, CV of the medians (also in SM cycles, each median times its run's mean SM clock,
    where runs kept it: a case at the power cap runs as fast as its chip's clock), change against the
    recorded (and committed) baseline, clocks, gate failures."""
    table = runs.groupby("case", sort=False).agg(
        runs=("median_ms", "size"),
        baseline_ms=("baseline_ms", "first"),
        median_ms=("median_ms", "median"),
        cv=("median_ms", lambda m: m.std(ddof=1) / m.mean()),
        worst=("delta", "max"),
        best=("delta", "min"),
        in_run_iqr=("iqr_ms", "median"),
        min_sm_mhz=("min_sm_mhz", "min"),
        mean_sm_mhz=("mean_sm_mhz", "median"),
        events=("events", lambda e: "; ".join(sorted(set(e)))),
        gate_failures=("verdict", lambda v: int((v == "fail").sum())),
        failed_checks=("failed", lambda f: "; ".join(sorted({x for x in f if x})) or "-"),
    )
    table["in_run_iqr"] = table["in_run_iqr"] / table["median_ms"]
    cycles = runs["median_ms"] * pd.to_numeric(runs["mean_sm_mhz"], errors="coerce")
    table["cv_in_cycles"] = cycles.groupby(runs["case"], sort=False).agg(lambda c: c.std(ddof=1) / c.mean())
    table["vs_committed"] = [
        median / committed[case] - 1 if case in committed else None
        for case, median in table["median_ms"].astype(float).items()
    ]
    return table


def caught_by(message: str) -> str:
    """Which of the gate's checks failed a slowed run, from its failure ``message``."""
    checks = [name for name, text in (("time", CAUGHT), ("host work", CAUGHT_BY_HOST_WORK)) if text in message]
    return " and ".join(checks) or "none"


def detection_runs(paths: Iterable[Path]) -> pd.DataFrame:
    """One row per measured run of ``research/studies/slowed_case.py`` in the JUnit files ``paths``: its test,
    case, slowdown, extra work per iteration, median against the baseline (``got``), whether the gate
    caught it, by which checks (its time, its host work or both), and whether a second measurement
    upheld the time's catch."""
    rows = []
    for path in paths:
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
            if "trainperf_median_ms" not in properties:
                continue  # skipped, or failed before it was measured
            failure = case.find("failure")
            message = "" if failure is None else failure.get("message", "") + (failure.text or "")
            checks = caught_by(message)
            median_ms = float(properties["trainperf_median_ms"])
            baseline_ms = float(properties["trainperf_baseline_ms"])
            rows.append(
                {
                    "case": properties.get("trainperf_case", "?"),
                    "test": case.get("name", ""),
                    "slowdown": float(properties["trainperf_slowdown"]),
                    "spin_ms": float(properties["trainperf_spin_ms"]),
                    "median_ms": median_ms,
                    "baseline_ms": baseline_ms,
                    "got": median_ms / baseline_ms - 1,
                    "caught": checks != "none",
                    "caught_by": checks,
                    "upheld": CAUGHT in message and UPHELD in message,
                    "other_failure": bool(message) and checks == "none",
                }
            )
    return pd.DataFrame(rows)


def detection_table(folders: list[Path]) -> pd.DataFrame:
    """Per case and slowdown: runs, spin per iteration, the slowdown the runs got against the baseline
    and, where the study also ran the case unslowed (slowdown 0), against those runs' median, and how
    many the gate caught."""
    frame = detection_runs(path for path in (folder / "detection.xml" for folder in folders) if path.exists())
    if frame.empty:
        return frame
    unslowed = frame[frame["slowdown"] == 0].groupby("case")["median_ms"].median()
    frame["vs_unslowed"] = frame["median_ms"] / frame["case"].map(unslowed) - 1  # NaN without such runs
    return frame.groupby(["case", "slowdown"]).agg(
        runs=("got", "size"),
        spin_ms=("spin_ms", "median"),
        got_median=("got", "median"),
        got_min=("got", "min"),
        got_max=("got", "max"),
        vs_unslowed=("vs_unslowed", "median"),
        caught=("caught", "sum"),
        by_host_work=("caught_by", lambda by: by.str.contains("host work").sum()),
        upheld=("upheld", "sum"),
        other_failures=("other_failure", "sum"),
    )


def committed_medians(path: Path | None) -> dict[str, float]:
    if path is None:
        return {}
    return {case: statistics.median(entry["samples_ms"]) for case, entry in trainperf.read_baselines(path).items()}


def percent(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:+.2%}"


def _mhz(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"


def markdown(aa: pd.DataFrame, detection: pd.DataFrame) -> str:
    shown = aa.assign(
        baseline_ms=aa["baseline_ms"].map("{:.3f}".format),
        median_ms=aa["median_ms"].map("{:.3f}".format),
        cv=aa["cv"].map("{:.2%}".format),
        in_run_iqr=aa["in_run_iqr"].map("{:.2%}".format),
        worst=aa["worst"].map(percent),
        best=aa["best"].map(percent),
        vs_committed=aa["vs_committed"].map(percent),
        min_sm_mhz=aa["min_sm_mhz"].map(_mhz),
        mean_sm_mhz=aa["mean_sm_mhz"].map(_mhz),
        cv_in_cycles=aa["cv_in_cycles"].map(lambda cv: "-" if cv != cv else f"{cv:.2%}"),
    )
    parts = ["## A/A\n", shown.to_markdown(disable_numparse=True), ""]
    if not detection.empty:
        shown_detection = detection.assign(
            spin_ms=detection["spin_ms"].map("{:.3f}".format),
            got_median=detection["got_median"].map(percent),
            got_min=detection["got_min"].map(percent),
            got_max=detection["got_max"].map(percent),
            vs_unslowed=detection["vs_unslowed"].map(percent),
        )
        shown_detection.index = [f"{case} {slowdown:.0%}" for case, slowdown in detection.index]
        parts += ["## Detection\n", shown_detection.to_markdown(disable_numparse=True), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--committed", type=Path, help="the committed baseline file of this device")
    parser.add_argument("--csv", type=Path, help="also write the per-run A/A rows here")
    args = parser.parse_args(argv)
    runs = aa_frame(args.folders)
    if args.csv:
        runs.to_csv(args.csv, index=False)
    print(markdown(aa_table(runs, committed_medians(args.committed)), detection_table(args.folders)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
