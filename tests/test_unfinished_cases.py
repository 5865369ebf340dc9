"""A case that raises (in build, mid-training, in evaluate) names itself and stays in every report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl", "--perf-report=out")
BROKEN = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("reference", options={"sleep_ms": 1.0}),
    Optimization("broken", options={"sleep_ms": 1.0, "raise_in": "WHERE"}),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("build", "ValueError: toy build failed"),
        pytest.param("step", "ValueError: toy step 2 failed", marks=pytest.mark.slow),
        pytest.param("evaluate", "ValueError: toy evaluation failed", marks=pytest.mark.slow),
    ],
)
def test_a_case_that_raises_is_named_and_in_every_report(pytester: pytest.Pytester, where: str, reason: str) -> None:
    pytester.makepyfile(toy_workload=_toy_source())
    pytester.makepyfile(test_toy=BROKEN.replace("WHERE", where))
    result = pytester.runpytest(*BASE, "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*trainperf: the error above ended case toy/broken*"])
    junit = (pytester.path / "junit.xml").read_text()  # the failed case has its properties too
    broken = junit[junit.index('name="test_toy[broken]"') :]
    assert '<property name="trainperf_verdict" value="error"' in broken and f'value="{reason}"' in broken
    result.stdout.fnmatch_lines([f"toy/broken: error: {reason}"])  # the summary, beside the cases table
    run = json.loads((pytester.path / "out" / "run.json").read_text())
    assert [case["name"] for case in run["benchmarks"]] == ["toy/reference"]
    assert run["unfinished"] == [
        {"name": "toy/broken", "fullname": "test_toy.py::test_toy[broken]", "verdict": "error", "reason": reason}
    ]
    markdown = (pytester.path / "out" / "report.md").read_text()
    assert "## Cases that did not finish" in markdown and reason in markdown
    html = (pytester.path / "out" / "report.html").read_text()
    assert "Cases that did not finish" in html and reason in html


def test_a_run_whose_only_case_raised_still_writes_its_documents(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(toy_workload=_toy_source())
    alone = BROKEN.replace("WHERE", "build").replace('Optimization("reference", options={"sleep_ms": 1.0}),\n', "")
    pytester.makepyfile(test_toy=alone)
    result = pytester.runpytest(*BASE)
    result.assert_outcomes(failed=1)
    run = json.loads((pytester.path / "out" / "run.json").read_text())
    assert run["benchmarks"] == [] and run["unfinished"][0]["name"] == "toy/broken"
    assert "toy/broken" in (pytester.path / "out" / "report.md").read_text()


def _toy_source() -> str:
    return (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
