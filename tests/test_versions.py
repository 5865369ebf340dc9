"""A torch, CUDA, cuDNN, driver or board upgrade since a case's recording: every view says so once at its
top, and a count that moved with it is labelled, a failure or a note as the user chose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.config.settings import Settings
from trainperf.judge import versions
from trainperf.judge.checks import Check, CheckName


def settings(**chosen: object) -> Settings:
    fields = {"profile": "off", "update_baselines": False, "baseline_dir": Path("bl"), "iters": None, "warmup": None}
    return Settings(**{**fields, "device": "cpu", "report": None, "strict": False, "sources": {}, **chosen})  # type: ignore[arg-type]


BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl")
RECORDED = {"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91002, "driver": "580.159.04", "name": "H100"}


def test_the_changes_are_the_watched_fields_known_on_both_sides() -> None:
    running = {**RECORDED, "torch": "2.12.0+cu130", "cudnn": None, "name": "H200"}
    changed = versions.changes(RECORDED, running)
    assert changed == {"torch": ("2.11.0+cu130", "2.12.0+cu130")}  # cuDNN unknown now; the name is the file's
    assert versions.line(changed) == "recorded with torch 2.11.0+cu130, running 2.12.0+cu130"
    two = versions.changes(RECORDED, {**running, "cuda": "13.1"})
    assert versions.line(two) == "recorded with torch 2.11.0+cu130, running 2.12.0+cu130; CUDA 13.0 -> 13.1"
    assert versions.changes(None, running) == {} and versions.changes(RECORDED, RECORDED) == {}


def test_a_failed_count_under_an_upgrade_is_labelled_and_fails_only_where_chosen() -> None:
    failed = Check(CheckName.WORK, False, "w/a: more work per iteration than recorded: ATen ops 9 against 8")
    changed = {"torch": ("2.11.0", "2.12.0")}
    noted = versions.moved_with_upgrade("w/a", failed, changed, fail=False)
    assert noted.passed is None
    assert noted.message == (
        "w/a: moved with the upgrade (torch 2.11.0 -> 2.12.0): "
        "more work per iteration than recorded: ATen ops 9 against 8"
    )
    assert versions.moved_with_upgrade("w/a", failed, changed, fail=True).passed is False
    assert versions.moved_with_upgrade("w/a", failed, {}, fail=False) is failed  # no upgrade: as it is
    fails = [settings(upgrade_counts=c, strict=s).upgrade_fails for c in ("strict", "fail", "note") for s in (1, 0)]
    assert fails == [True, False, True, True, False, False]


@pytest.mark.slow
def test_a_recording_of_another_torch_is_named_at_the_top_and_its_moved_counts_labelled(
    pytester: pytest.Pytester,
) -> None:
    from conftest import TOY_SOURCE, toy_test

    pytester.makepyfile(toy_workload=TOY_SOURCE)

    def test(extra: int) -> str:
        return toy_test(f'[Optimization("reference", options={{"extra_ops": {extra}, "sleep_ms": 10.0}})]')  # steady

    pytester.makepyfile(test_toy=test(0))
    pytester.runpytest(*BASE, "--update-baselines", "--perf-runs=1").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "bl").glob("*.json")
    document = json.loads(stored.read_text())
    running = document["cases"]["toy/reference"]["fingerprint"]["torch"]
    document["cases"]["toy/reference"]["fingerprint"]["torch"] = "2.11.0+cu130"
    stored.write_text(json.dumps(document))
    line = f"versions: recorded with torch 2.11.0+cu130, running {running} (1 case)"

    same = pytester.runpytest(*BASE, "--perf-report=same")
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["*= trainperf: *", line])
    run = json.loads((pytester.path / "same" / "run.json").read_text())
    assert run["version_changes"] == [line.removeprefix("versions: ")]

    pytester.makepyfile(test_toy=test(3))  # its ops moved: with the upgrade, as far as it knows
    noted = pytester.runpytest(*BASE, "--perf-report=noted")
    noted.assert_outcomes(passed=1)
    checks = json.loads((pytester.path / "noted" / "run.json").read_text())["benchmarks"][0]["extra_info"]["checks"]
    (work,) = [check for check in checks if check["name"] == "work"]
    assert work["passed"] is None
    assert work["message"].startswith(f"toy/reference: moved with the upgrade (torch 2.11.0+cu130 -> {running}): ")
    assert "ATen ops" in work["message"] and "+3 aten::add" in work["message"]

    strict = pytester.runpytest(*BASE, "--perf-strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines([f"*toy/reference: moved with the upgrade (torch 2.11.0+cu130 -> {running}): *"])
    pytester.runpytest(*BASE, "--perf-strict", "--perf-upgrade-counts=note").assert_outcomes(passed=1)
    pytester.runpytest(*BASE, "--perf-upgrade-counts=fail").assert_outcomes(failed=1)


def test_compare_shows_each_runs_versions_and_says_where_they_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainperf.cli.main import main

    captured = Path(__file__).parent / "data" / "h200_examples_aa.run.json"
    before = json.loads(captured.read_text())
    after = json.loads(captured.read_text())
    after["machine_info"]["torch"] = "2.12.0+cu130"
    paths = []
    for name, data in (("a.json", before), ("b.json", after)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    assert main(["compare", *paths]) == 0
    out = capsys.readouterr().out
    assert f"torch {before['machine_info']['torch']}, CUDA {before['machine_info']['cuda']}" in out
    assert f"note: A and B ran with other versions (torch {before['machine_info']['torch']} -> 2.12.0+cu130)" in out


def test_the_job_summary_and_the_report_say_it_at_their_top(tmp_path: Path) -> None:
    from trainperf.cli.main import main
    from trainperf.record.document import load
    from trainperf.report.job_summary import render

    data = json.loads((Path(__file__).parent / "data" / "h200_examples_aa.run.json").read_text())
    data["version_changes"] = ["recorded with torch 2.11.0+cu130, running 2.12.0+cu130 (12 cases)"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    summary = render(load(path)).splitlines()
    assert summary[2] == "> **versions**: recorded with torch 2.11.0+cu130, running 2.12.0+cu130 (12 cases)"
    assert main(["report", str(path), "-o", str(tmp_path / "out")]) == 0
    markdown = (tmp_path / "out" / "report.md").read_text().splitlines()
    assert markdown[2] == summary[2]
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index("running 2.12.0+cu130 (12 cases)") < page.index("class='verdict'")
