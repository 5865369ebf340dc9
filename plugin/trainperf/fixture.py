"""The ``trainperf`` fixture's object: runs a case, checks it and records what it measured."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from trainperf import gate, stats
from trainperf.case import REFERENCE, Optimization, case_key
from trainperf.profile.roofline import RooflinePoint
from trainperf.runner import Measurement, Prepared, release_memory, run_case
from trainperf.session import CaseResult, PerfSession
from trainperf.workload import Workload


@dataclass
class TrainPerf:
    """Handed to a test as ``trainperf``: ``trainperf.run(workload, optimization)``."""

    session: PerfSession
    nodeid: str
    marker_iters: int | None
    marker_warmup: int | None
    record_property: Callable[[str, object], None]
    trace_s: float = 0.0  # what tracing one more iteration in this process cost (part of profiling's cost)

    def run(self, workload: Workload, optimization: Optimization) -> CaseResult | None:
        """Train the case, gate it, record it; fails the test naming the case, figures and thresholds.
        In the child process of ``--profile``, trains one marked iteration instead and returns None."""
        warmup, iters = self._iterations(workload)
        device = self.session.device
        if optimization.needs_cuda and device.type != "cuda":
            pytest.skip(f"{case_key(workload.name, optimization.name)} runs on CUDA only: {optimization.needs_cuda}")
        if optimization.ddp is not None:
            from trainperf.distributed import unavailable

            reason = unavailable(device)
            if reason is not None:
                pytest.skip(f"{case_key(workload.name, optimization.name)}: {reason}")
        child = self.session.child
        if child is not None:
            from trainperf.profile.replay import run_marked_iteration

            run_marked_iteration(workload, optimization, device, self.session.size, warmup, child.out_dir, child.torch)
            return None
        key = case_key(workload.name, optimization.name)
        measurement = self._measure(key, workload, optimization, warmup, iters)
        reference = self._reference(workload, optimization, measurement, warmup, iters)
        result = self._judge(workload, optimization, measurement, reference)
        for check in result.checks:
            if check.name == gate.UNRELIABLE:
                self.session.note(check.message)
        self.session.record(result)
        self._attach(result)
        if measurement.sample_unit == "images":
            self.session.note(_training_log_line(result))
        if measurement.communication is not None:
            self.session.note(_communication_line(result))
            if self.session.profiling is not None:
                self.session.note(f"{key}: not profiled: a data-parallel case runs one process per GPU")
        elif self.session.profiling is not None:
            self._profile(result)
        failed = gate.failures(result.checks)
        if failed:
            pytest.fail("\n".join(check.message for check in failed), pytrace=False)
        return result

    def _measure(
        self, key: str, workload: Workload, optimization: Optimization, warmup: int, iters: int
    ) -> Measurement:
        """The case's run; running out of device memory fails this case alone, its memory released."""
        device, out_of_memory = self.session.device, None
        if optimization.ddp is not None:
            return self._measure_data_parallel(key, workload, optimization, warmup, iters)
        try:
            return run_case(workload, optimization, device, self.session.size, warmup, iters, self._tracer(key))
        except torch.OutOfMemoryError as error:
            out_of_memory = str(error).strip().splitlines()[0][:300]
        release_memory(device)  # outside the except block: its traceback no longer holds the case's tensors
        pytest.fail(f"{key}: ran out of {device.type} memory: {out_of_memory} (memory released)", pytrace=False)

    def _measure_data_parallel(
        self, key: str, workload: Workload, optimization: Optimization, warmup: int, iters: int
    ) -> Measurement:
        """One process per GPU (two on the CPU); any rank's failure fails the case, naming the ranks."""
        from trainperf import distributed
        from trainperf.profile.profiler import case_folder

        report = self.session.settings.report
        keep = None if report is None else case_folder(report / "data-parallel", key)
        device, size = self.session.device, self.session.size
        try:
            return distributed.run_case(workload, optimization, device, size, warmup, iters, keep)
        except distributed.DistributedError as error:
            failure = str(error)
        pytest.fail(f"{key}: data-parallel run failed: {failure}", pytrace=False)

    def _tracer(self, key: str) -> Callable[[Prepared], None] | None:
        """With a profiler that reads the test process's own trace: one more iteration, traced after the
        timed run; a failure there is a note, the case's measurement stands."""
        profiling = self.session.profiling
        if profiling is None or not profiling.backend.traces_in_test:
            return None
        folder, device = profiling.folder(key), self.session.device

        def trace(case: Prepared) -> None:
            from trainperf.profile.replay import marked_iteration

            started = time.perf_counter()
            try:
                marked_iteration(case, device, folder, torch_profiler=True, cuda_profiler=False)
            except Exception as error:  # the timed run is done: a tracing failure only loses the profile
                self.session.note(f"{key}: iteration not traced: {type(error).__name__}: {error}")
            self.trace_s = time.perf_counter() - started

        return trace

    def _iterations(self, workload: Workload) -> tuple[int, int]:
        default_warmup, default_iters = workload.iterations(self.session.size)
        settings = self.session.settings
        warmup = _first_set(settings.warmup, self.marker_warmup, default_warmup)
        iters = _first_set(settings.iters, self.marker_iters, default_iters)
        return warmup, iters

    def _reference(
        self, workload: Workload, optimization: Optimization, measurement: Measurement, warmup: int, iters: int
    ) -> Measurement:
        """The workload's reference case of this run; measured now if no reference case ran yet."""
        slot = (workload.name, warmup, iters)
        if optimization.name == REFERENCE:
            self.session.references[slot] = measurement
        if slot not in self.session.references:
            self.session.note(
                f"{workload.name}: reference case measured on demand for the speedup of {optimization.name}"
            )
            self.session.references[slot] = run_case(
                workload, Optimization(REFERENCE), self.session.device, self.session.size, warmup, iters
            )
        return self.session.references[slot]

    def _judge(
        self, workload: Workload, optimization: Optimization, measurement: Measurement, reference: Measurement
    ) -> CaseResult:
        key = case_key(workload.name, optimization.name)
        settings = self.session.settings
        kind = self.session.device.type
        summary = stats.summarize(measurement.samples_ms)
        metric = workload.metric
        tolerance = optimization.accuracy_tolerance
        stored = self.session.stored_samples(key)
        is_reference = optimization.name == REFERENCE
        reference_median = stats.summarize(reference.samples_ms).median
        rate = measurement.per_second(measurement.samples_per_iteration, summary.median)
        speedup = rate / reference.per_second(reference.samples_per_iteration, reference_median)
        checks = [
            gate.accuracy_check(
                key,
                measurement.metric,
                reference=None if is_reference else reference.metric,
                tolerance=metric.default_tolerance if tolerance is None else tolerance,
                higher_is_better=metric.higher_is_better,
                floor=metric.floor,
                metric=metric.name,
                losses=measurement.losses,
                initial=measurement.initial_metric,
                min_gain=metric.min_gain,
            ),
            gate.baseline_check(
                key,
                measurement.samples_ms,
                stored,
                strict=settings.strict and not settings.update_baselines,
                max_slowdown=gate.DEFAULT_MAX_SLOWDOWN
                if optimization.max_slowdown is None
                else optimization.max_slowdown,
            ),
        ]
        if not is_reference:
            checks.append(gate.speedup_check(key, speedup, optimization.min_speedup.get(kind)))
            checks.append(
                gate.memory_check(
                    key,
                    measurement.peak_memory_bytes,
                    reference.peak_memory_bytes,
                    optimization.max_memory_ratio.get(kind),
                )
            )
        if settings.update_baselines:
            checks = [_as_note(c) if c.name == "baseline" else c for c in checks]
        unreliable = gate.clock_check(key, measurement.clocks)
        if unreliable is not None:  # a throttled GPU: its times are noted, not judged
            checks = [_as_note(c) if c.name in ("baseline", "speedup") else c for c in checks] + [unreliable]
        return CaseResult(
            key=key,
            nodeid=self.nodeid,
            workload=workload.name,
            optimization=optimization.name,
            knobs=optimization.knobs(),
            metric_name=metric.name,
            measurement=measurement,
            summary=summary,
            speedup=speedup,
            baseline_median_ms=None if stored is None else stats.summarize(stored).median,
            checks=checks,
            peak_flops=self.session.peak_flops,
            baseline_summary=None if stored is None else stats.summarize(stored),
        )

    def _attach(self, result: CaseResult) -> None:
        """JUnit properties of the case."""
        properties = {
            "trainperf_case": result.key,
            "trainperf_median_ms": round(result.summary.median, 4),
            "trainperf_iqr_ms": round(result.summary.iqr, 4),
            "trainperf_speedup": None if result.speedup is None else round(result.speedup, 3),
            "trainperf_baseline_ms": result.baseline_median_ms,
            "trainperf_samples_per_s": round(result.samples_per_second, 1),
            "trainperf_sample_unit": result.measurement.sample_unit,
            "trainperf_mfu": None if result.mfu is None else round(result.mfu, 4),
            "trainperf_first_step_s": round(result.measurement.first_step_s, 3),
            "trainperf_reader_share": round(result.reader_share, 4),
            f"trainperf_{result.metric_name}": round(result.measurement.metric, 5),
            "trainperf_peak_memory_bytes": result.measurement.peak_memory_bytes,
            "trainperf_verdict": result.verdict,
        }
        figures = result.measurement.communication
        if figures is not None:
            processes = figures["processes"]
            properties["trainperf_processes"] = processes
            if result.speedup is not None:
                properties["trainperf_scaling_efficiency"] = round(result.speedup / processes, 4)
            properties["trainperf_allreduce_busbw_gbs"] = round(figures["all_reduce_busbw_gbs"], 2)
            properties["trainperf_comm_hidden_share"] = figures.get("hidden_share")
        for name, value in properties.items():
            if value is not None:
                self.record_property(name, value)

    def _profile(self, result: CaseResult) -> None:
        """Re-run this node under the profiler; attach what it found, or one note why it found nothing."""
        from trainperf.profile.profiler import profile_case
        from trainperf.report import profile_summary

        session = self.session
        assert session.profiling is not None
        job = session.profiling.job(self.nodeid, result.key, result.reader_share, result.summary.median)
        backend = session.profiling.backend
        session.progress(f"{result.key}: profiling with {backend.name} (files in {job.out_dir})")
        case = profile_case(backend, job)
        case.seconds += self.trace_s
        session.progress(f"{result.key}: {backend.name} done in {case.seconds:.0f} s")
        if case.profile is not None and case.profile.roofline:
            case.files.append(_plot(case.profile.roofline, job.out_dir / "roofline.png", result.key, session))
        if case.error is not None:
            session.note(f"{result.key}: profile not attached: {case.error}")
        result.profile = case
        for name, value in profile_summary.properties(case).items():
            if value is not None:
                self.record_property(name, value)


def _training_log_line(result: CaseResult) -> str:
    """An image case the way a training log shows it: seconds per batch, of which waiting for data,
    and images per second."""
    m = result.measurement
    batch_cost = result.summary.median / 1000.0
    reader_cost = result.reader_share * batch_cost
    return (
        f"{result.key}: batch_cost {batch_cost:.4f} s, reader_cost {reader_cost:.4f} s "
        f"({result.reader_share:.1%}), ips {result.samples_per_second:,.1f} {m.sample_unit}/s"
    )


def _communication_line(result: CaseResult) -> str:
    """One summary line of a data-parallel case: processes, scaling, all-reduce, hidden communication."""
    figures = result.measurement.communication or {}
    processes = figures.get("processes", 1)
    parts = [f"{result.key}: {processes} {figures.get('backend', '')} processes"]
    if result.speedup is not None:
        parts.append(f"scaling efficiency {result.speedup / processes:.0%} of the single-process reference")
    if figures.get("all_reduce_busbw_gbs") is not None:
        parts.append(f"all-reduce bus bandwidth {figures['all_reduce_busbw_gbs']:.1f} GB/s")
    if figures.get("hidden_share") is not None:
        parts.append(
            f"{figures['hidden_share']:.0%} of {figures['communication_ms']:.2f} ms communication hidden behind compute"
        )
    return ", ".join(parts)


def _plot(points: list[RooflinePoint], path: Path, key: str, session: PerfSession) -> Path:
    """The roofline PNG; a plotting failure is a note, the profile stays."""
    from trainperf.report.roofline_plot import plot_roofline

    try:
        return plot_roofline(points, path, f"{key}: roofline of its Top-5 kernels ({session.fingerprint.name})")
    except (OSError, ValueError) as error:
        session.note(f"{key}: roofline plot not written: {error}")
        return path


def _first_set(*values: int | None) -> int:
    for value in values:
        if value is not None:
            return value
    raise ValueError("no value set")


def _as_note(check: gate.Check) -> gate.Check:
    """A slower time reported, not failed (under --update-baselines, or on a throttled GPU)."""
    return gate.Check(check.name, None if check.passed is False else check.passed, check.message)
