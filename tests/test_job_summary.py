"""The GitHub Actions job summary, rendered from a run the toy suite wrote: failures with their
messages, the cases that did not finish, and GitHub's size limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.cli.main import main
from trainperf.record import document
from trainperf.report import job_summary

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl")
SUITE = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("reference", options={"sleep_ms": 10.0}),
    Optimization("variant", options={"sleep_ms": VARIANT_MS}),
    Optimization("broken", options={"raise_in": "RAISE_IN"}),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.slow
def test_a_failing_run_summarises_its_failures_and_unfinished_cases(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=SUITE.replace("VARIANT_MS", "10.0").replace("RAISE_IN", "none"))
    pytester.runpytest(*BASE, "--update-baselines", "--perf-runs=1").assert_outcomes(passed=3)
    pytester.makepyfile(test_toy=SUITE.replace("VARIANT_MS", "40.0").replace("RAISE_IN", "build"))
    pytester.runpytest(*BASE, "--perf-report=out").assert_outcomes(passed=1, failed=2)
    run = document.load(pytester.path / "out" / "run.json")
    text = job_summary.render(run)
    assert text.startswith("## trainperf: ") and "**1 error**, **1 fail**, **1 pass**" in text
    assert "| toy/variant " in text and "### toy/variant: fail" in text
    assert "- toy/variant: slower than baseline: median " in text
    assert "- **toy/broken** (error): ValueError: toy build failed" in text
    cut = job_summary.render(run, limit=600)
    assert len(cut.encode()) <= 600 and "(cut at 600 bytes, GitHub's limit: " in cut


def test_the_summary_command_prints_a_real_gpu_run(capsys: pytest.CaptureFixture[str]) -> None:
    run = Path(__file__).parent / "data" / "h100_gpt2_ncu.run.json"
    assert main(["summary", str(run)]) == 0
    text = capsys.readouterr().out
    names = [case["name"] for case in json.loads(run.read_text())["benchmarks"]]
    assert text.startswith("## trainperf: NVIDIA H100 80GB HBM3") and all(f"| {name} " in text for name in names)
