"""--perf-memory-snapshot: allocated memory by phase from a snapshot recorded on the H200 (the MLP-Mixer's
amp_bf16 case, one iteration), checked against the peak its timed iterations measured; and the one
line a run gets where no snapshot can be recorded."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from trainperf.measure import memory_timeline
from trainperf.record import document
from trainperf.report import experiment, pages

CAPTURE = Path(__file__).parent / "data" / "h200_mixer_memory"  # as --perf-report left it: run document,
RECORDED = CAPTURE / "memory" / "mlp_mixer-amp_bf16"  # and the case's snapshot and phase marks
PHASES = ["data", "forward", "backward", "optimizer"]


@pytest.fixture(scope="module")
def frame():  # type: ignore[no-untyped-def]
    snapshot, marks = memory_timeline.load(RECORDED)
    return memory_timeline.timeline(snapshot, marks, device=0)


def test_the_phases_run_in_order_and_memory_never_goes_below_zero(frame) -> None:  # type: ignore[no-untyped-def]
    assert list(dict.fromkeys(frame["phase"])) == ["data", "forward", "backward", "optimizer"]
    assert frame["allocated_mib"].min() > 0
    assert frame["event"].is_monotonic_increasing


def test_the_walk_back_ends_where_the_allocator_stood_at_the_dump(frame) -> None:  # type: ignore[no-untyped-def]
    with open(RECORDED / memory_timeline.SNAPSHOT, "rb") as handle:
        snapshot = pickle.load(handle)
    held = sum(b["size"] for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated")
    assert frame["allocated_mib"].iloc[-1] == pytest.approx(held / memory_timeline.MIB)


def test_the_peak_by_phase_agrees_with_the_peak_the_timed_iterations_measured(frame) -> None:  # type: ignore[no-untyped-def]
    case = json.loads((CAPTURE / "run.json").read_text())["benchmarks"][0]
    measured_mib = case["extra_info"]["peak_memory_bytes"] / memory_timeline.MIB
    peaks = memory_timeline.phase_peaks(frame)
    assert max(peaks.values()) == pytest.approx(measured_mib, rel=0.01)
    assert peaks["forward"] > 20 * peaks["data"]  # activations, not the batch, fill the GPU
    assert peaks == pytest.approx(case["extra_info"]["memory_snapshot"]["phase_peak_mib"])  # as the run reported


def test_the_summary_writes_the_chart_beside_the_snapshot(tmp_path: Path) -> None:
    for name in (memory_timeline.SNAPSHOT, memory_timeline.MARKS):
        shutil.copy(RECORDED / name, tmp_path / name)
    summary = memory_timeline.summarize(tmp_path, device=0)
    assert Path(summary["chart"]).read_bytes().startswith(b"\x89PNG")
    assert summary["events"] > 1000 and set(summary["phase_peak_mib"]) == {"data", "forward", "backward", "optimizer"}


def test_on_the_cpu_one_note_says_why_there_is_no_snapshot(toy_suite) -> None:  # type: ignore[no-untyped-def]
    pytester = toy_suite()
    result = pytester.runpytest("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl",
                                "--perf-memory-snapshot")  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*--perf-memory-snapshot: no snapshots: PyTorch records memory history on CUDA only*"])
    assert result.stdout.str().count("--perf-memory-snapshot: no snapshots") == 1


def test_the_report_redraws_the_chart_from_the_snapshot_beside_the_run_document(tmp_path: Path) -> None:
    report = experiment.build_report([document.load(CAPTURE / "run.json")])  # recorded under /tmp on the GPU
    (section,) = report.sections
    row = section.memory.iloc[0]
    assert row["case"] == "mlp_mixer/amp_bf16" and list(section.memory.columns)[2:] == PHASES
    assert row["forward"] == round(json.loads((CAPTURE / "run.json").read_text())["benchmarks"][0]["extra_info"]
                                   ["memory_snapshot"]["phase_peak_mib"]["forward"])  # fmt: skip
    (view,) = section.memory_views
    assert view.snapshot == RECORDED / memory_timeline.SNAPSHOT and view.chart_png.startswith(b"\x89PNG")
    page = pages.write_html(report, tmp_path).read_text()
    assert pages.MEMORY_TITLE in page and "alt='mlp_mixer/amp_bf16 memory by phase'" in page
    markdown = pages.write_markdown(report, tmp_path).read_text()
    assert "report-images/mlp_mixer-amp_bf16-memory.png" in markdown
    assert (tmp_path / "report-images" / "mlp_mixer-amp_bf16-memory.png").read_bytes().startswith(b"\x89PNG")


def test_without_its_snapshot_the_report_keeps_the_peaks_and_says_why_there_is_no_chart(tmp_path: Path) -> None:
    shutil.copy(CAPTURE / "run.json", tmp_path / "run.json")
    report = experiment.build_report([document.load(tmp_path / "run.json")])
    (section,) = report.sections
    assert section.memory.iloc[0]["backward"] > 0
    (view,) = section.memory_views
    assert view.snapshot is None and view.chart_png is None
    page = pages.write_html(report, tmp_path / "out")
    assert "snapshot file not found beside the run document nor where recorded: no chart" in page.read_text()
