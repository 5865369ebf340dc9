"""One case's result as the session keeps it (``CaseResult``) and as the run document records it
(``CaseEntry``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from trainperf.judge import stats
from trainperf.judge.checks import Check
from trainperf.judge.policy import Detection
from trainperf.judge.verdict import Verdict, of_checks
from trainperf.measure.measurement import Measurement

if TYPE_CHECKING:  # a profile exists only with --profile: its tables stay out of processes that measure
    from trainperf.profile.profiler import CaseProfile

# data-parallel processes on the CPU share this machine's cores (and the single-process reference had
# them all): their speedup over it says nothing of how training scales
CPU_BACKEND = "gloo"


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
    checks: list[Check]
    peak_flops: float | None = None  # the device's dense bf16 peak, FLOP/s, for MFU
    profile: CaseProfile | None = None  # with --profile
    baseline_summary: stats.Summary | None = None  # the stored baseline's samples, summarized
    detection: Detection = field(default_factory=Detection)  # what the gate catches at its measured noise
    confirmation: dict[str, Any] | None = None  # the first measurement, when the case was measured again
    reference_samples_per_iteration: int | None = None  # the reference's batch, for a data-parallel case's scaling

    @property
    def verdict(self) -> Verdict:
        return of_checks(self.checks)

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
    def scaling(self) -> dict[str, Any] | None:
        """A data-parallel case on GPUs: its speedup over the single-process reference per process, and
        which scaling that is: "strong" where the processes split the reference's batch, "weak" where
        each keeps it. None elsewhere, and on the CPU, where the processes share the reference's cores."""
        figures = self.measurement.communication
        if not figures or figures.get("backend") == CPU_BACKEND or self.speedup is None:
            return None
        processes = int(figures.get("processes", 1))
        samples, reference = self.measurement.samples_per_iteration, self.reference_samples_per_iteration
        kinds = {reference: "strong", None if reference is None else reference * processes: "weak"}
        return {
            "efficiency": self.speedup / processes,
            "kind": kinds.get(samples, "other"),
            "processes": processes,
            "samples_per_process": samples / processes,
            "reference_samples": reference,
        }

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


class CaseEntry(TypedDict):
    """One case in ``benchmarks``: pytest-benchmark's fields, trainperf's figures in ``extra_info``
    (``summary_ms``, ``speedup``, ``metric``, ``checks``, ``verdict``, ``profile``, ``communication``, ...)."""

    group: str
    name: str
    fullname: str
    params: dict[str, str]
    param: str  # pytest-benchmark's --group-by=param reads it
    options: dict[str, int]
    stats: dict[str, Any]
    extra_info: dict[str, Any]
