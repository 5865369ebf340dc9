"""research/studies/unjudged_cases.py: which cases a strict run split over several calls still has to judge.

The documents are a real run's (``h200_gpt2.run.json``, all 19 GPT-2 cases) cut as a stopped call would
leave them: its later cases missing, one held for its second measurement, one failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from research.studies import unjudged_cases

ROOT = Path(__file__).resolve().parents[2]
GPT2_FILE = str(ROOT / "perf_tests" / "test_gpt2.py")
REAL_RUN = ROOT / "tests" / "data" / "h200_gpt2.run.json"


def stopped_call(folder: Path, kept: int, unfinished: list[tuple[str, str]]) -> dict[str, Any]:
    """The real run with only its first ``kept`` cases measured and ``unfinished`` (case, verdict) listed
    as its session listed them, written to ``folder/run.json``."""
    run = json.loads(REAL_RUN.read_text())
    measured = [case for case in run["benchmarks"][:kept] if case["name"] not in dict(unfinished)]
    run.update(
        benchmarks=measured,
        unfinished=[
            {"name": name, "fullname": f"perf_tests/test_gpt2.py::test_gpt2[{name.split('/')[1]}]",
             "verdict": verdict, "reason": "first measurement: baseline" if verdict == "unjudged" else "error"}
            for name, verdict in unfinished
        ],
        finished=False,
    )  # fmt: skip
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(run))
    return run


def left(capsys: pytest.CaptureFixture[str], documents: str) -> set[str]:
    unjudged_cases.main([documents, GPT2_FILE])
    return {test_id.split("[")[-1].rstrip("]") for test_id in capsys.readouterr().out.split()}


def test_a_run_not_begun_judges_every_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = json.loads(REAL_RUN.read_text())
    assert left(capsys, str(tmp_path / "aa1-*" / "run.json")) == {case["param"] for case in run["benchmarks"]}


def test_the_next_call_judges_what_the_stopped_one_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = stopped_call(tmp_path / "aa1-test_gpt2-101500", 8, [("gpt2/amp_bf16", "unjudged"), ("gpt2/tf32", "fail")])
    rest = json.loads(REAL_RUN.read_text())["benchmarks"][8:]
    remaining = left(capsys, str(tmp_path / "aa1-*" / "run.json"))
    assert remaining == {"amp_bf16", *(case["param"] for case in rest)}
    assert {case["name"] for case in run["benchmarks"]}.isdisjoint({f"gpt2/{case}" for case in remaining})


def test_a_case_judged_again_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stopped_call(tmp_path / "aa1-test_gpt2-101500", 3, [("gpt2/tf32", "unjudged")])
    unjudged_cases.main([str(tmp_path / "aa1-*" / "run.json"), GPT2_FILE])
    assert "unjudged_cases: gpt2/tf32 not judged in " in capsys.readouterr().err


def test_a_case_the_stop_cut_off_is_judged_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The case running when a call's time limit stopped its session (lease BR's resnet/stack_gpu_decode)."""
    stopped_call(tmp_path / "aa1-test_gpt2-101500", 3, [("gpt2/tf32", "interrupted")])
    assert "tf32" in left(capsys, str(tmp_path / "aa1-*" / "run.json"))


def test_a_case_that_waited_and_was_judged_in_a_later_call_is_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped_call(tmp_path / "aa1-test_gpt2-101500", 3, [("gpt2/tf32", "unjudged")])
    run = json.loads(REAL_RUN.read_text())
    (tmp_path / "aa1-test_gpt2-102500").mkdir()
    (tmp_path / "aa1-test_gpt2-102500" / "run.json").write_text(json.dumps(run))
    unjudged_cases.main([str(tmp_path / "aa1-*" / "run.json"), GPT2_FILE])
    out, err = capsys.readouterr()
    assert out.split() == []
    assert "gpt2/tf32" not in err


def test_every_call_of_the_run_counts_and_other_runs_do_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stopped_call(tmp_path / "aa1-test_gpt2-101500", 10, [])
    run = json.loads(REAL_RUN.read_text())
    later = {**run, "benchmarks": run["benchmarks"][10:]}
    (tmp_path / "aa1-test_gpt2-102500").mkdir()
    (tmp_path / "aa1-test_gpt2-102500" / "run.json").write_text(json.dumps(later))
    assert left(capsys, str(tmp_path / "aa1-*" / "run.json")) == set()
    assert len(left(capsys, str(tmp_path / "aa2-*" / "run.json"))) == len(run["benchmarks"])


def test_a_document_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "aa1-x").mkdir()
    (tmp_path / "aa1-x" / "run.json").write_text("{}")
    with pytest.raises(Exception, match="not a trainperf run document"):
        unjudged_cases.main([str(tmp_path / "aa1-*" / "run.json"), GPT2_FILE])
