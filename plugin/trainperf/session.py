"""The run's state: settings read once, the device, stored baselines, results and pending updates.

Lives in ``config.stash``; the fixture gets callbacks from it, and the report reads its results.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainperf import baselines, gate, host_work_gate, stats, workers
from trainperf import device as devices
from trainperf.isolated import Children
from trainperf.launcher import Launch
from trainperf.measurement import Measurement
from trainperf.profile.child import ChildRun
from trainperf.profile.profiler import CaseProfile, ProfileSetup
from trainperf.provenance import git_commit
from trainperf.report.document import CaseEntry, case_entry
from trainperf.report.run_file import write_progress
from trainperf.settings import Settings
from trainperf.verdict import Detection
from trainperf.workload import FULL, TINY

# what a baseline keeps (as "host") of the machine it was recorded on: the host's time to issue an op, the
# GPU's busy share and its mean SM clock, against which a later failure's figures are set
HOST_FIGURES = ("host_dispatch_us", "gpu_busy_share", "mean_sm_clock_mhz")


@dataclass
class CaseResult:
    """One case's measurement, summary and verdicts, as reported."""

    key: str  # workload/optimization
    nodeid: str
    workload: str
    optimization: str
    knobs: dict[str, Any]
    metric_name: str
    measurement: Measurement
    summary: stats.Summary
    speedup: float | None
    baseline_median_ms: float | None
    checks: list[gate.Check]
    peak_flops: float | None = None  # the device's dense bf16 peak, FLOP/s, for MFU
    profile: CaseProfile | None = None  # with --profile
    baseline_summary: stats.Summary | None = None  # the stored baseline's samples, summarized
    detection: Detection = field(default_factory=Detection)  # what the gate catches at its measured noise
    confirmation: dict[str, Any] | None = None  # the first measurement, when the case was measured again

    @property
    def verdict(self) -> str:
        return gate.verdict(self.checks)

    @property
    def reader_share(self) -> float:
        """Host data wait over iteration time (reader_cost / batch_cost), medians of the timed iterations."""
        return stats.summarize(self.measurement.reader_ms).median / self.summary.median

    @property
    def samples_per_second(self) -> float:
        return self.measurement.per_second(self.measurement.samples_per_iteration, self.summary.median)

    @property
    def achieved_flops(self) -> float | None:
        """Model FLOP/s at the median iteration time."""
        flops = self.measurement.flops_per_iteration
        return None if flops is None else self.measurement.per_second(flops, self.summary.median)

    @property
    def mfu(self) -> float | None:
        """Model FLOPs utilisation: achieved model FLOP/s over the device's dense bf16 peak."""
        achieved = self.achieved_flops
        return None if achieved is None or self.peak_flops is None else achieved / self.peak_flops

    @property
    def baseline_delta(self) -> float | None:
        if self.baseline_median_ms is None:
            return None
        return stats.relative_change(self.summary.median, self.baseline_median_ms)

    @property
    def figures(self) -> str:
        """'median 82.137 ms (+1.8% against the baseline), speedup 3.48x': the figures a note quotes."""
        text = f"median {self.summary.median:.3f} ms"
        if self.baseline_delta is not None:
            text += f" ({self.baseline_delta:+.1%} against the baseline)"
        return text if self.speedup is None else f"{text}, speedup {self.speedup:.2f}x"


@dataclass
class PerfSession:
    settings: Settings
    device: torch.device
    fingerprint: devices.Fingerprint
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: list[CaseResult] = field(default_factory=list)
    entries: list[CaseEntry] = field(default_factory=list)  # the run document's record of each result
    references: dict[tuple[str, int, int], Measurement] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    changes: list[baselines.Change] = field(default_factory=list)
    baseline_error: baselines.BaselineError | OSError | None = None  # the write that failed, if one did
    accepted: dict[str, float] = field(default_factory=dict)  # medians --perf-history/--perf-calibrate add
    accepted_figures: dict[str, dict[str, float]] = field(default_factory=dict)  # their calls and busy share
    unfinished: list[dict[str, str]] = field(default_factory=list)  # cases that started and did not finish
    waiting: dict[tuple[str, str], str] = field(default_factory=dict)  # (case, node id): its first measurement
    child: ChildRun | None = None  # set in the child process that --profile starts
    profiling: ProfileSetup | None = None  # with --profile, in the parent process
    progress: Callable[[str], None] = print  # a line shown while a long step (profiling) runs
    confirmations: int = 0  # cases measured again before failing, in this session
    children: Children | None = None  # how a fresh process re-runs a node (set by the lazy session)
    launch: Launch | None = None  # this process's rank where torchrun (or another launcher) started it

    @property
    def baseline_file(self) -> Path:
        return baselines.baseline_path(self.settings.baseline_dir, self.fingerprint.slug)

    @property
    def peak_flops(self) -> float | None:
        """Dense bf16 peak FLOP/s for MFU: --perf-peak-tflops, else the known figure of this GPU."""
        if self.settings.peak_tflops is not None:
            return self.settings.peak_tflops * 1e12
        if self.device.type != "cuda":
            return None
        known = devices.peak_tflops(self.fingerprint.name)
        if known is None:
            self.note(f"MFU not shown: no known bf16 peak for {self.fingerprint.name}; set --perf-peak-tflops")
            return None
        return known * 1e12

    @property
    def size(self) -> str:
        return FULL if self.device.type == "cuda" else TINY

    def load_baselines(self) -> None:
        """Read this device's baseline file; raises BaselineError for an unusable file."""
        self.stored = baselines.load(self.baseline_file)

    def stored_baseline(self, key: str) -> gate.Baseline | None:
        entry = self.stored.get(key)
        return None if entry is None else baselines.stored_baseline(entry)

    def stored_calls(self, key: str) -> host_work_gate.StoredCalls | None:
        entry = self.stored.get(key)
        return None if entry is None else baselines.stored_calls(entry)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def record(self, result: CaseResult) -> CaseEntry:
        """Keep a finished case (its profile attached): its run-document entry, written once, is what
        every report reads; under --update-baselines a case that kept its accuracy becomes a baseline."""
        self.results.append(result)
        self.entries.append(case_entry(result))
        if self.settings.update_baselines and not any(c.passed is False for c in result.checks if c.name == "accuracy"):
            self.pending[result.key] = baseline_entry(result, self.fingerprint)
            self._write_baseline(result.key)
        if self.keeps_history and _accepted(result, self.settings.calibrate):
            self.accepted[result.key] = result.summary.median
            measured = result.measurement
            figures = host_work_gate.history_figures(
                measured.host_calls, measured.gpu_busy_share, measured.host_step_calls, measured.host_torch_calls
            )
            for key, value in figures.items():
                self.accepted_figures.setdefault(key, {})[result.key] = value
        self.waiting.pop((result.key, result.nodeid), None)
        self.save_progress()
        return self.entries[-1]

    def record_unfinished(self, key: str, nodeid: str, verdict: str, reason: str) -> None:
        """A case that started and ended without a measurement (an error, its time limit, an interrupt):
        every report lists it with its verdict and one-line reason."""
        first = self.waiting.pop((key, nodeid), None)  # stopped in its second measurement: keep the first's
        why = reason if first is None else f"{reason}; first measurement: {first}"
        self.unfinished.append(_unfinished(key, nodeid, verdict, why))
        self.save_progress()

    def unjudged(self) -> list[dict[str, str]]:
        """Each case held for its second measurement, as a case that did not finish: its first measurement's
        failed checks are the reason."""
        return [_unfinished(case, nodeid, "unjudged", f"first measurement: {first}")
                for (case, nodeid), first in self.waiting.items()]  # fmt: skip

    def leave_unjudged(self) -> None:
        """At the session's end: the cases still held join those that did not finish."""
        self.unfinished += self.unjudged()
        self.waiting.clear()

    def record_waiting(self, key: str, nodeid: str, first: str) -> None:
        """A case held for its second measurement at the end of the session, with its first one's failed checks."""
        self.waiting[(key, nodeid)] = first
        self.save_progress()

    def save_progress(self) -> None:
        """The run document as it stands, written after each case with --perf-report: a session killed
        where it cannot write its reports (SIGKILL, the machine taken away) keeps every case it finished.
        Of a launched group's ranks, the one that writes the reports at the end alone writes."""
        if self.settings.report is None or (self.launch is not None and not self.launch.reports):
            return
        write_progress(self, self.settings.report, workers.run_file(os.environ))

    def _write_baseline(self, key: str) -> None:
        """Merge one recorded case into this device's file as soon as it finishes, so that a run cut
        short (a CI time limit, a kill) keeps every case it finished. A failed write stops the writes;
        ``write_baselines`` reports it at the run's end."""
        if self.baseline_error is not None:
            return
        try:
            self.changes += baselines.update(self.baseline_file, self.fingerprint.slug, {key: self.pending[key]})
        except (baselines.BaselineError, OSError) as error:
            self.baseline_error = error

    def write_baselines(self) -> None:
        """Under --update-baselines: each case was written when it finished; raise the error that
        stopped those writes, if one did."""
        if self.baseline_error is not None:
            raise self.baseline_error

    @property
    def keeps_history(self) -> bool:
        """Whether judged medians go to the history at the end (--perf-history or --perf-calibrate)."""
        return self.settings.history or self.settings.calibrate

    def write_history(self) -> list[str]:
        """Under --perf-history (--perf-calibrate): the accepted (judged) cases' medians added to their
        baselines' history."""
        if not (self.keeps_history and self.accepted and not self.settings.update_baselines):
            return []
        board = self.fingerprint.board_part_number
        return baselines.add_history(
            self.baseline_file, self.fingerprint.slug, self.accepted, self.accepted_figures, board
        )


def _unfinished(key: str, nodeid: str, verdict: str, reason: str) -> dict[str, str]:
    return {"name": key, "fullname": nodeid, "verdict": verdict, "reason": reason}


def _accepted(result: CaseResult, calibrate: bool) -> bool:
    """A case that passed, its time judged against a stored baseline (not throttled, not failed); when
    calibrating, any case whose time was judged, passed or failed."""
    if calibrate:
        return any(check.name == "baseline" and check.passed is not None for check in result.checks)
    judged = any(check.name == "baseline" and check.passed is True for check in result.checks)
    return judged and result.verdict == "pass"


def baseline_entry(result: CaseResult, fingerprint: devices.Fingerprint) -> dict[str, Any]:
    m = result.measurement
    during = m.clocks.get("during") or {}
    return {
        "samples_ms": m.samples_ms,
        "run_medians_ms": m.run_medians_ms or [result.summary.median],
        "host_calls": m.host_calls,
        "host_step_calls": m.host_step_calls,
        "host_torch_calls": m.host_torch_calls,
        "summary": result.summary.as_dict(),
        "accuracy": {"metric": result.metric_name, "value": m.metric},
        "peak_memory_bytes": m.peak_memory_bytes,
        "reader_ms_median": stats.summarize(m.reader_ms).median,
        "host": {key: during[key] for key in HOST_FIGURES if key in during},
        "iters": m.iters,
        "warmup": m.warmup,
        "fingerprint": fingerprint.as_dict(),
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda},
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
    }
