"""The run's record: settings read once, the device, stored baselines, results and pending updates.

Held by the session object (``hooks.session``), which reads the device and the commit and hands them
in: this module does no I/O. The fixture adds to it, and every report reads its results.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainperf.child.measuring import Children
from trainperf.child.protocol import ChildRun
from trainperf.config.settings import Settings
from trainperf.judge import host_work_check, policy, stats, versions
from trainperf.judge.checks import Baseline
from trainperf.judge.verdict import Verdict
from trainperf.measure import device as devices
from trainperf.measure.launcher import Launch
from trainperf.measure.measurement import Measurement
from trainperf.record.result import CaseEntry, CaseResult
from trainperf.spec.workload import FULL, TINY
from trainperf.store import baselines

if TYPE_CHECKING:  # with --profile only: the profilers and their tables stay out of processes that measure
    from trainperf.profile.profiler import ProfileSetup

# what a baseline keeps (as "host") of the machine it was recorded on: the host's time to issue an op, the
# GPU's busy share and its mean SM clock, against which a later failure's figures are set
HOST_FIGURES = ("host_dispatch_us", "gpu_busy_share", "mean_sm_clock_mhz")


@dataclass
class Held:
    """A case held for its second measurement at the session's end: its first measurement, the messages
    of the checks that may change (by check), and when it was taken."""

    first: CaseResult
    suspect: dict[str, str]
    at: float = field(default_factory=time.monotonic)

    @property
    def reason(self) -> str:
        return "; ".join(self.suspect.values())


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
    details: list[str] = field(default_factory=list)  # per-case lines the table already shows, under -v
    changes: list[baselines.Change] = field(default_factory=list)
    baseline_error: baselines.BaselineError | OSError | None = None  # the write that failed, if one did
    accepted: dict[str, float] = field(default_factory=dict)  # medians --perf-history/--perf-calibrate add
    accepted_figures: dict[str, dict[str, float]] = field(default_factory=dict)  # their calls and busy share
    unfinished: list[dict[str, str]] = field(default_factory=list)  # cases that started and did not finish
    held: dict[tuple[str, str], Held] = field(default_factory=dict)  # by (case, node id): for a second measurement
    child: ChildRun | None = None  # set in the child process that --profile starts
    profiling: ProfileSetup | None = None  # with --profile, in the parent process
    progress: Callable[[str], None] = print  # a line shown while a long step (profiling) runs
    confirmations: int = 0  # cases measured again before failing, in this session
    children: Children | None = None  # how a fresh process re-runs a node (set by the session object, hooks.session)
    launch: Launch | None = None  # this process's rank where torchrun (or another launcher) started it
    commit: str | None = None  # the checkout's commit, read at the start (hooks.session): baselines keep it

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

    def stored_baseline(self, key: str) -> Baseline | None:
        entry = self.stored.get(key)
        return None if entry is None else baselines.stored_baseline(entry)

    def stored_work(self, key: str) -> list[dict[str, Any]]:
        """The work counted per iteration in each recorded run of the case ([] where none was)."""
        return list((self.stored.get(key) or {}).get("work", []))

    def version_changes(self, key: str) -> dict[str, tuple[str, str]]:
        """What changed since the case's recording: torch, CUDA, cuDNN, the driver, the board."""
        return versions.changes((self.stored.get(key) or {}).get("fingerprint"), self.fingerprint.as_dict())

    def version_lines(self) -> list[str]:
        """Each distinct change of versions since the recording of the cases that ran, with its cases:
        what every view says once at its top."""
        cases: dict[str, list[str]] = {}
        for result in self.results:
            if changed := self.version_changes(result.key):
                cases.setdefault(versions.line(changed), []).append(result.key)
        return [f"{text} ({len(keys)} case{'s' * (len(keys) > 1)})" for text, keys in cases.items()]

    def stored_calls(self, key: str) -> host_work_check.StoredCalls | None:
        entry = self.stored.get(key)
        return None if entry is None else baselines.stored_calls(entry)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def record(self, result: CaseResult, entry: CaseEntry) -> None:
        """Keep a finished case (its profile attached) and its run-document entry, which every report reads;
        under --update-baselines a case that kept its accuracy waits in ``pending`` to become a baseline."""
        self.results.append(result)
        self.entries.append(entry)
        if self.settings.update_baselines and policy.keeps_baseline(result.checks):
            self.pending[result.key] = baseline_entry(result, self.fingerprint, self.commit)
        if self.keeps_history and policy.accepted(result.checks, result.verdict, calibrate=self.settings.calibrate):
            self.accepted[result.key] = result.summary.median
            measured = result.measurement
            figures = host_work_check.history_figures(
                measured.host_calls, measured.gpu_busy_share, measured.host_step_calls
            )
            for key, value in figures.items():
                self.accepted_figures.setdefault(key, {})[result.key] = value
        self.held.pop((result.key, result.nodeid), None)

    def record_unfinished(self, key: str, nodeid: str, verdict: Verdict, reason: str) -> None:
        """A case that started and ended without a measurement (an error, its time limit, an interrupt):
        every report lists it with its verdict and one-line reason."""
        held = self.held.pop((key, nodeid), None)  # stopped in its second measurement: keep the first's
        why = reason if held is None else f"{reason}; first measurement: {held.reason}"
        self.unfinished.append(_unfinished(key, nodeid, verdict, why))

    def unjudged(self) -> list[dict[str, str]]:
        """Each case held for its second measurement, as a case that did not finish: its first measurement's
        failed checks are the reason."""
        return [_unfinished(case, nodeid, Verdict.NOT_JUDGED, f"first measurement: {held.reason}")
                for (case, nodeid), held in self.held.items()]  # fmt: skip

    def leave_unjudged(self) -> None:
        """At the session's end: the cases still held join those that did not finish."""
        self.unfinished += self.unjudged()
        self.held.clear()

    def hold(self, key: str, nodeid: str, first: CaseResult, suspect: dict[str, str]) -> None:
        """A case held for its second measurement at the end of the session, with its first one."""
        self.held[(key, nodeid)] = Held(first, suspect)

    @property
    def keeps_history(self) -> bool:
        """Whether judged medians go to the history at the end (--perf-history or --perf-calibrate)."""
        return self.settings.history or self.settings.calibrate


def _unfinished(key: str, nodeid: str, verdict: Verdict, reason: str) -> dict[str, str]:
    return {"name": key, "fullname": nodeid, "verdict": str(verdict), "reason": reason}


def baseline_entry(result: CaseResult, fingerprint: devices.Fingerprint, commit: str | None) -> dict[str, Any]:
    m = result.measurement
    during = m.clocks.get("during") or {}
    return {
        "samples_ms": m.samples_ms,
        "run_medians_ms": m.run_medians_ms or [result.summary.median],
        "host_calls": m.host_calls,
        "host_step_calls": m.host_step_calls,
        "work": m.work,
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
        "commit": commit,
    }
