"""The JSON run document under --perf-report: pytest-benchmark's layout where it fits
(``machine_info``, ``commit_info``, ``benchmarks`` with ``stats`` in seconds), trainperf's
figures in each benchmark's ``extra_info``."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from pytest_benchmark.stats import Stats

from trainperf import __version__, stats
from trainperf.report import profile_summary
from trainperf.session import CaseResult, PerfSession, git_commit

RUN_FILE = "run.json"


def _benchmark(result: CaseResult) -> dict[str, Any]:
    seconds = Stats()
    for sample in result.measurement.samples_ms:
        seconds.update(sample / 1000.0)
    m = result.measurement
    return {
        "group": result.workload,
        "name": result.key,
        "fullname": result.nodeid,
        "params": {"optimization": result.optimization},
        "stats": {**seconds.as_dict(), "data": [x / 1000.0 for x in m.samples_ms]},
        "extra_info": {
            "knobs": result.knobs,
            "summary_ms": result.summary.as_dict(),
            "reader_ms": m.reader_ms,
            "reader_share": result.reader_share,
            "losses": m.losses,
            "metric": {"name": result.metric_name, "value": m.metric, "initial": m.initial_metric},
            "speedup": result.speedup,
            "baseline_median_ms": result.baseline_median_ms,
            "baseline_summary_ms": None if result.baseline_summary is None else result.baseline_summary.as_dict(),
            "samples_per_iteration": m.samples_per_iteration,
            "samples_per_second": result.samples_per_second,
            "sample_unit": m.sample_unit,
            "flops_per_iteration": m.flops_per_iteration,
            "achieved_flops": result.achieved_flops,
            "mfu": result.mfu,
            "peak_memory_bytes": m.peak_memory_bytes,
            "warmup_s": m.warmup_s,
            "first_step_s": m.first_step_s,
            "iters": m.iters,
            "warmup": m.warmup,
            "clocks": m.clocks,
            "communication": m.communication,
            "checks": [{"name": c.name, "passed": c.passed, "message": c.message} for c in result.checks],
            "verdict": result.verdict,
            "reader_ms_median": stats.summarize(m.reader_ms).median,
            "profile": None if result.profile is None else profile_summary.record(result.profile),
        },
    }


def run_document(session: PerfSession) -> dict[str, Any]:
    return {
        "version": __version__,
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine_info": session.fingerprint.as_dict(),
        "commit_info": {"id": git_commit()},
        "settings": {"size": session.size, "device": str(session.device), "sources": dict(session.settings.sources)},
        "benchmarks": [_benchmark(r) for r in session.results],
        "notes": session.notes,
    }


def write_run_document(session: PerfSession, directory: Path, name: str = RUN_FILE) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(run_document(session), indent=1) + "\n", encoding="utf-8")
    return path
