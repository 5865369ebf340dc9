"""The public readers: a run document as a table, and the baseline file a device is judged against."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trainperf

DATA = Path(__file__).parent / "data"
RUN = DATA / "cpu_examples.run.json"  # captured from a CPU run of the examples


def test_a_run_document_reads_as_one_row_a_case_with_its_verdict() -> None:
    table = trainperf.read_run(RUN)
    cases = json.loads(RUN.read_text())["benchmarks"]
    assert list(table["case"]) == [case["name"] for case in cases]
    assert list(table["median_ms"]) == [case["extra_info"]["summary_ms"]["median"] for case in cases]
    assert set(table["verdict"]) <= {"pass", "fail", "not judged", "unreliable", "error", "timeout", "interrupted"}


def test_a_file_that_is_not_a_run_document_names_the_field(tmp_path: Path) -> None:
    broken = json.loads(RUN.read_text())
    del broken["benchmarks"][0]["extra_info"]["summary_ms"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="summary_ms"):
        trainperf.read_run(path)


def test_the_cpu_reads_its_own_baseline_file_in_the_folder(tmp_path: Path) -> None:
    path = trainperf.baseline_file(tmp_path, "cpu")
    assert path.parent == tmp_path and path.name.startswith("cpu-") and path.suffix == ".json"
    assert trainperf.read_baselines(path) == {}  # no file yet: nothing stored


def test_a_committed_baseline_file_reads_by_case_and_a_broken_one_names_the_case(tmp_path: Path) -> None:
    committed = Path(__file__).resolve().parent.parent / "baselines" / "nvidia-h100-80gb-hbm3.json"
    stored = trainperf.read_baselines(committed)
    assert set(stored) == set(json.loads(committed.read_text())["cases"])
    copy = tmp_path / committed.name
    shutil.copy(committed, copy)
    document = json.loads(copy.read_text())
    case = sorted(document["cases"])[0]
    document["cases"][case]["samples_ms"] = "fast"
    copy.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=case.split("/")[0]):
        trainperf.read_baselines(copy)
