"""A stored baseline read back for the gate: its runs, its history and the machine's figures where it
was recorded, from files of today and of before those figures were kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from trainperf.config.settings import Settings
from trainperf.measure import device as devices
from trainperf.record.session import PerfSession


def session(tmp_path: Path, stored: dict[str, dict[str, Any]]) -> PerfSession:
    settings = Settings(
        profile="none",
        update_baselines=False,
        baseline_dir=tmp_path,
        iters=None,
        warmup=None,
        device="cpu",
        report=None,
        strict=False,
        sources={},
    )
    cpu = torch.device("cpu")
    return PerfSession(settings, cpu, devices.fingerprint(cpu), stored=stored)


def entry(**host: float) -> dict[str, Any]:
    return {"samples_ms": [10.0, 10.2], "run_medians_ms": [10.0, 10.1, 9.9], "history_ms": [10.3], "host": host}


def test_the_recording_s_host_speed_and_gpu_clock_reach_the_gate(tmp_path: Path) -> None:
    found = session(tmp_path, {"w/a": entry(host_dispatch_us=4.0, mean_sm_clock_mhz=1632.0)}).stored_baseline("w/a")
    assert found is not None
    assert (found.host_dispatch_us, found.sm_clock_mhz) == (4.0, 1632.0)
    assert list(found.run_medians_ms) == [10.0, 10.1, 9.9] and list(found.history_ms) == [10.3]


def test_a_baseline_recorded_before_the_clock_was_kept_has_none(tmp_path: Path) -> None:
    found = session(tmp_path, {"w/a": entry(host_dispatch_us=4.0)}).stored_baseline("w/a")
    assert found is not None and found.sm_clock_mhz is None and found.host_dispatch_us == 4.0
    assert session(tmp_path, {}).stored_baseline("w/a") is None


def test_an_entry_the_file_refuses_is_that_cases_note_and_the_later_cases_are_written(tmp_path: Path) -> None:
    from trainperf.hooks import publish
    from trainperf.store import baselines

    perf = session(tmp_path, {})
    good = {
        "samples_ms": [5.0, 5.1],
        "summary": {"median": 5.0},
        "accuracy": {"metric": "accuracy", "value": 0.9},
        "peak_memory_bytes": None,
        "fingerprint": {"slug": perf.fingerprint.slug},
        "date": "2026-12-01T00:00:00+00:00",
    }
    perf.pending = {"w/a": {**good, "work": [{"ops": 9, "syncs": -1, "copies": 0}]}, "w/b": good}
    for key in perf.pending:
        publish._write_baseline(perf, key)
    assert perf.baseline_error is None and set(baselines.load(perf.baseline_file)) == {"w/b"}
    refused = [note for note in perf.notes if "not written: case 'w/a' needs 'work'" in note]
    assert len(refused) == 1 and refused[0].startswith(f"baseline {perf.baseline_file}: ")
