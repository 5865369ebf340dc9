"""``trainperf``: reports from run documents, without re-running anything; their medians into the history.

trainperf report RUN.json [RUN.json ...] -o DIR   write DIR/report.html and DIR/report.md
trainperf compare A.json B.json                  per-case differences from A to B
trainperf export RUN.json --format F -o DIR      the figures for github-action-benchmark or Bencher
trainperf summary RUN.json                       a GitHub Actions job summary (Markdown) on stdout
trainperf calibrate RUN.json [RUN.json ...]      add the runs' judged medians to the baselines' history
trainperf noise BASELINE.json                    per case: its measured noise and the slowdown it catches
trainperf record RUN.json                        write the baselines a recording run kept (its write failed)
trainperf bisect NODE [GOOD [BAD]]               the first commit at which the case's work rose
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from trainperf.config.options import SettingError
from trainperf.config.sources import for_command
from trainperf.judge import checks, versions
from trainperf.record.document import RECORDED, RunDocument, RunDocumentError, cases_frame, load, merged_cases
from trainperf.report import exports
from trainperf.report.calibration import judged_figures, judged_medians
from trainperf.store import baselines
from trainperf.store.baselines import BaselineError


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:  # the reader went away early (``| head``): it had what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 0


def _run(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="trainperf",
        description="Reports from trainperf run documents, and their medians into the baselines' history.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="write report.html and report.md from run documents")
    report.add_argument("runs", nargs="+", type=Path, help="run.json files (a case in several: the last wins)")
    report.add_argument("-o", "--output", type=Path, required=True, help="folder for the report")
    compare = commands.add_parser("compare", help="print per-case differences between two run documents")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    export = commands.add_parser("export", help="write a run's figures for a dashboard")
    export.add_argument("run", type=Path)
    export.add_argument("--format", choices=exports.FORMATS, required=True, help="the dashboard's format")
    export.add_argument("-o", "--output", type=Path, required=True, help="folder for the files")
    summary = commands.add_parser("summary", help="print a run as a GitHub Actions job summary (Markdown)")
    summary.add_argument("run", type=Path)
    calibrate = commands.add_parser(
        "calibrate", help="add the judged medians of runs of the recorded code to the baselines' history, as "
        "--perf-calibrate would have (add each run once)",
    )  # fmt: skip
    calibrate.add_argument("runs", nargs="+", type=Path, help="run.json files")
    calibrate.add_argument(
        "--baseline-dir", help="folder of the per-device baseline files (default: as pytest resolves it here: "
        "$TRAINPERF_BASELINE_DIR, else ini trainperf_baseline_dir, else baselines, from the rootdir)",
    )  # fmt: skip
    noise = commands.add_parser(
        "noise", help="print per case of a baseline file its measured noise and the slowdown the gate catches"
    )
    noise.add_argument("baseline", type=Path, help="a per-device baseline file (baselines/<device>.json)")
    noise.add_argument("-k", dest="only", default="", help="only the cases whose name contains this text")
    record = commands.add_parser(
        "record", help="write the baseline entries a run recorded with --update-baselines (where its own write "
        "failed: a full disk, a bad path) into the device's baseline file",
    )  # fmt: skip
    record.add_argument("run", type=Path, help="the recording's run.json")
    record.add_argument(
        "--baseline-dir", help="folder of the per-device baseline files (default: as pytest resolves it here: "
        "$TRAINPERF_BASELINE_DIR, else ini trainperf_baseline_dir, else baselines, from the rootdir)",
    )  # fmt: skip
    bisect = commands.add_parser(
        "bisect", help="find the first commit at which a case asks for more work than its baseline recorded "
        "(git bisect run in a scratch worktree; exit 0 found, 1 not found, 3 could not decide)",
    )  # fmt: skip
    bisect.add_argument("case", nargs="?", help="the case's test node id (tests/test_model.py::test_model[amp])")
    bisect.add_argument("good", nargs="?", help="a commit where it was good (default: its baseline's commit)")
    bisect.add_argument("bad", nargs="?", default="HEAD", help="a commit where it is bad (default: HEAD)")
    bisect.add_argument(
        "--baseline-dir", help="folder of the per-device baseline files (default: as pytest resolves it here)"
    )
    bisect.add_argument("--json", action="store_true", help="print the outcome as JSON")
    bisect.add_argument(
        "--run", type=Path, help="instead of a case: every case of this run.json that failed on its work, "
        "from --since to HEAD; the culprits go into the run.json (the nightly's step)",
    )  # fmt: skip
    bisect.add_argument("--since", help="with --run: the last commit whose night passed")
    bisect.add_argument("--budget-s", type=float, default=1200.0, help="with --run: seconds for all its cases")
    args = parser.parse_args(argv)
    try:
        if args.command == "bisect" and args.run is not None:
            return _bisect_run(args.run, args.since, args.baseline_dir, args.budget_s, parser)
        if args.command == "bisect":
            if args.case is None:
                parser.error("bisect: give a case's node id, or --run RUN.json --since COMMIT")
            return _bisect(args.case, args.good, args.bad, args.baseline_dir, as_json=args.json)
        if args.command == "record":
            return _record(load(args.run), _baseline_dir(args.baseline_dir))
        if args.command == "noise":
            return _noise(args.baseline, args.only)
        if args.command == "summary":
            from trainperf.report.job_summary import render

            print(render(load(args.run)), end="")
            return 0
        if args.command in ("report", "export") and args.output.exists() and not args.output.is_dir():
            raise RunDocumentError(f"-o {args.output}: a file is there, not a folder")
        if args.command == "export":
            for path in exports.write(_with_cases(load(args.run)).cases, args.format, args.output):
                print(f"trainperf: wrote {path}")
            return 0
        if args.command == "report":
            return _report([load(path) for path in args.runs], args.output)
        if args.command == "calibrate":
            return _calibrate([load(path) for path in args.runs], _baseline_dir(args.baseline_dir))
        return _compare(_with_cases(load(args.before)), _with_cases(load(args.after)))
    except (RunDocumentError, BaselineError, SettingError) as error:
        print(f"trainperf: {error}", file=sys.stderr)
        return 2


def _bisect(node: str, good: str | None, bad: str, baseline_dir: str | None, as_json: bool) -> int:
    """Bisect the case; the outcome printed as text or JSON, its status returned."""
    from trainperf.cli.bisect import BisectError, bisect, text  # it loads torch: only this command needs it

    settings = for_command({"baseline_dir": baseline_dir})
    try:
        outcome = bisect(node, good, bad, settings.baseline_dir, settings.device)
    except BisectError as error:
        print(f"trainperf bisect: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("trainperf bisect: interrupted; the checkout, its branch and its index are as they were", file=sys.stderr)
        return 130
    print(json.dumps(outcome.as_dict(), indent=2) if as_json else "\n".join(text(outcome)))
    return outcome.status


def _bisect_run(
    run: Path, since: str | None, baseline_dir: str | None, budget_s: float, parser: argparse.ArgumentParser
) -> int:
    """The nightly's bisection of its failed cases: a line per case, the culprits into the run.json."""
    from trainperf.cli.bisect import BisectError, bisect_run
    from trainperf.report.lines import culprit_line

    if since is None:
        parser.error("bisect --run: give --since, the last commit whose night passed")
    settings = for_command({"baseline_dir": baseline_dir})
    try:
        culprits = bisect_run(run, since, "HEAD", settings.baseline_dir, settings.device, budget_s)
    except BisectError as error:
        print(f"trainperf bisect: {error}", file=sys.stderr)
        return 2
    for found in culprits:
        print(f"trainperf bisect: {culprit_line(found)}")
    return 0 if all(found["found"] for found in culprits) else 3  # as for one case: 3, not all decided


def _baseline_dir(given: str | None) -> Path:
    """The baseline folder: ``--baseline-dir``, else where a pytest session started here would keep it."""
    return for_command({"baseline_dir": given}).baseline_dir


def _record(document: RunDocument, directory: Path) -> int:
    """The run's recorded baseline entries merged into its device's file, old -> new printed."""
    recorded = document.data.get(RECORDED)
    if not recorded or not recorded.get("cases"):
        raise RunDocumentError(f"{document.path}: it recorded no baselines (a run with --update-baselines does)")
    path = baselines.baseline_path(directory, recorded["device"])
    changes = baselines.update(path, recorded["device"], recorded["cases"])
    print(f"trainperf: baselines written to {path}:")
    for line in baselines.format_changes(changes):
        print(f"  {line}")
    return 0


def _with_cases(document: RunDocument) -> RunDocument:
    if not document.cases:
        raise RunDocumentError(f"{document.path}: no cases in it")
    return document


def _report(documents: list[RunDocument], output: Path) -> int:
    from trainperf.report.experiment import build_report
    from trainperf.report.pages import write_html, write_markdown

    report = build_report(documents)
    for path in (write_html(report, output), write_markdown(report, output)):
        print(f"trainperf: wrote {path}")
    return 0


def compare_table(before: RunDocument, after: RunDocument) -> pd.DataFrame:
    """Per case: median ms before and after, the change, host calls, ATen ops, kernel ms, synchronizations
    and kernels per iteration, speedups and verdicts; a case in one only shows blanks on the other side,
    as does a run that counted none of a figure. A figure neither run has (kernels on a CPU) is left out."""
    columns = ["case", "median_ms", "host_calls", "ops", "kernel_ms", "syncs", "kernels", "speedup", "verdict"]
    old = cases_frame(merged_cases([before]))[columns]
    new = cases_frame(merged_cases([after]))[columns]
    both = old.merge(new, on="case", how="outer", suffixes=(" A", " B"), sort=False)
    change = both["median_ms B"] / both["median_ms A"] - 1.0
    table = pd.DataFrame(
        {
            "case": both["case"],
            "A ms": both["median_ms A"].map(_number),
            "B ms": both["median_ms B"].map(_number),
            "change": change.map(lambda v: "" if pd.isna(v) else f"{v:+.1%}"),
            "A host calls": both["host_calls A"].map(_count),
            "B host calls": both["host_calls B"].map(_count),
            "A ops": both["ops A"].map(_count),
            "B ops": both["ops B"].map(_count),
            "A kernel ms": both["kernel_ms A"].map(_number),
            "B kernel ms": both["kernel_ms B"].map(_number),
            "A syncs": both["syncs A"].map(_count),
            "B syncs": both["syncs B"].map(_count),
            "A kernels": both["kernels A"].map(_count),
            "B kernels": both["kernels B"].map(_count),
            "A speedup": both["speedup A"].map(_times),
            "B speedup": both["speedup B"].map(_times),
            "A verdict": both["verdict A"].fillna("(absent)"),
            "B verdict": both["verdict B"].fillna("(absent)"),
        }
    )
    blank = {column for column in table if not table[column].astype(bool).any()}
    pairs = [
        (f"A {figure}", f"B {figure}") for figure in ("host calls", "ops", "kernel ms", "syncs", "kernels", "speedup")
    ]
    return table.drop(columns=[column for pair in pairs if set(pair) <= blank for column in pair])


def _calibrate(documents: list[RunDocument], directory: Path) -> int:
    """Each run's judged medians into the history of its device's baseline file; then, per file, the
    cases whose threshold the added runs moved."""
    from trainperf.report.noise_table import threshold_changes

    before: dict[Path, dict[str, dict[str, Any]]] = {}
    for document in documents:
        slug = document.machine.get("slug")
        if not slug:
            raise RunDocumentError(f"{document.path}: no device in its machine_info: not a trainperf run document")
        path = baselines.baseline_path(directory, slug)
        if not path.exists():
            raise BaselineError(f"{path}: no baseline file for {slug}; record one with --update-baselines")
        before.setdefault(path, baselines.load(path))
        medians = judged_medians(document)
        board = document.machine.get("board_part_number")
        added = baselines.add_history(path, slug, medians, judged_figures(document), board)
        if not added:
            raise RunDocumentError(f"{document.path}: no case's time was judged against a baseline in {path}")
        print(f"trainperf: {len(added)} judged case(s) of {document.path} added to the history in {path}")
    for path, cases in before.items():
        changes = threshold_changes(cases, baselines.load(path))
        print(f"trainperf: {path}: {len(changes) or 'no'} case(s) with a new threshold")
        print("\n".join(f"  {line}" for line in changes), end="\n" if changes else "")
    return 0


def _noise(path: Path, only: str) -> int:
    from trainperf.report.noise_table import noise_frame, render

    if not path.is_file():
        raise BaselineError(f"{path}: no such baseline file")
    cases = {name: entry for name, entry in baselines.load(path).items() if only in name}
    if not cases:
        raise BaselineError(f"{path}: no case" + (f" whose name contains {only!r}" if only else ""))
    print(f"{path}: {len(cases)} case(s), the gate's default floor {checks.DEFAULT_FLOOR:.0%} (a case's own raises it)")
    print(render(noise_frame(cases)))
    return 0


def _compare(before: RunDocument, after: RunDocument) -> int:
    for label, run in (("A", before), ("B", after)):
        stack = ", ".join(
            f"{words} {run.machine[field]}" for field, words in versions.WATCHED.items() if run.machine.get(field)
        )
        print(f"{label}: {run.path} ({run.machine.get('name', 'unknown device')}{'; ' + stack if stack else ''})")
    if before.machine.get("name") != after.machine.get("name"):
        print("note: A and B ran on different devices: the differences include the device")
    if changed := versions.changes(before.machine, after.machine):
        print(f"note: A and B ran with other versions ({versions.short(changed)}): the differences include them")
    print(compare_table(before, after).to_string(index=False))
    return 0


def _number(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3f}"


def _count(value: float) -> str:
    return "" if pd.isna(value) else f"{value:,.0f}"


def _times(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.2f}x"


if __name__ == "__main__":
    sys.exit(main())
