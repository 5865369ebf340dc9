"""The ``trainperf`` fixture's object: runs a case, has it judged, and records what it measured.

It orchestrates only: ``runner`` (or ``distributed``) measures, ``verdict`` judges, ``profile`` re-runs
the case under a profiler, ``session`` keeps the record that every report reads.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from trainperf.child import measuring
from trainperf.child.process import ChildError
from trainperf.config.settings import CaseOptions
from trainperf.hooks.late_confirmation import ConfirmLater, LateConfirmation
from trainperf.hooks.publish import record_case, save_progress
from trainperf.judge import checks, policy, recording, stats
from trainperf.judge.checks import CheckName
from trainperf.judge.verdict import Verdict
from trainperf.measure import time_limit, workers
from trainperf.measure.errors import first_line
from trainperf.measure.measurement import Measurement, combined
from trainperf.measure.runner import free_memory, run_case
from trainperf.record.result import CaseEntry, CaseResult
from trainperf.record.session import PerfSession
from trainperf.report import junit, lines
from trainperf.spec.case import CaseSpec, case_key
from trainperf.spec.optimization import REFERENCE, Optimization
from trainperf.spec.workload import Workload


@dataclass
class TrainPerf:
    """Handed to a test as ``trainperf``: ``trainperf.run(workload, optimization, reference=...)``."""

    session: PerfSession
    nodeid: str
    options: CaseOptions  # iterations and time limit the session or the test's marker sets
    record_property: Callable[[str, object], None]
    late: LateConfirmation | None = None  # where a second measurement waits for the end of the session
    # what selects this test in a child pytest: its file's path and its name in it (a node id names a file
    # outside the rootdir as "::name", which pytest refuses); the node id where empty
    selector: str = ""
    stop_session: Callable[[str], None] | None = None  # ends the session after this test, saying why

    def run(
        self, workload: Workload, optimization: Optimization, reference: Optimization | None = None
    ) -> CaseResult | None:
        """Train the case, gate it, record it; fails the test naming the case, figures and thresholds.
        ``reference`` is the ladder's reference case (``Ladder.reference``), measured on demand when this run
        has not measured it yet. In the child process of ``--profile``, trains one marked iteration instead."""
        spec = self._spec(workload, optimization)
        self._skip_where_unavailable(spec)
        declared = Optimization(REFERENCE) if reference is None else reference
        child = self.session.child
        if child is not None and child.measure is not None:  # a fresh process measuring for its parent
            measuring.write(self._limited(spec.but(declared) if child.measure == REFERENCE else spec), child.out_dir)
            return None
        if child is not None:
            from trainperf.child.marked_iteration import run_marked_iteration

            run_marked_iteration(spec, child.out_dir, child.torch)
            return None
        try:
            result = self._judged(spec, declared)
        except time_limit.CaseTimeout as error:
            timed_out: str | None = str(error)
            self._unfinished(spec.key, Verdict.TIMEOUT, str(error))
        except pytest.fail.Exception as failure:  # out of memory, a data-parallel rank's failure
            self._unfinished(spec.key, Verdict.FAIL, first_line(failure))
            raise
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (``termination``): every report names the case cut off
            self._unfinished(spec.key, Verdict.INTERRUPTED, "the session was stopped while it ran")
            raise
        except Exception as error:  # the test fails with its traceback; every report names the case
            self._unfinished(spec.key, Verdict.ERROR, f"{type(error).__name__}: {first_line(error)}")
            error.add_note(f"trainperf: the error above ended case {spec.key}")
            raise
        else:
            timed_out = None
        if timed_out is not None:  # failed here, not in the handler: its message once, not chained to the timeout's
            pytest.fail(timed_out, pytrace=False)
        measurement = result.measurement
        entry = self._recorded_and_profiled(result)
        for name, value in junit.properties(entry).items():
            self.record_property(name, value)
        for check in result.checks:
            if check.name == CheckName.CLOCKS or check.noted:
                self.session.note(check.message)
        for knob in measurement.unapplied:
            self.session.note(f"{result.key}: {knob}")
        if measurement.sample_unit == "images":
            self.session.details.append(lines.training_log_line(entry))
        if measurement.communication is not None:
            self.session.note(lines.communication_line(entry, self.session.entries))
        failed = checks.failures(result.checks)
        if failed:
            pytest.fail("\n".join(check.message for check in failed), pytrace=False)
        return result

    def _recorded_and_profiled(self, result: CaseResult) -> CaseEntry:
        """The case recorded; profiled first where --profile-cases names it and its reports cannot wait
        (xdist, a launcher, -x), else with the other cases at the session's end."""
        session = self.session
        profiled = session.profiling is not None
        if profiled and result.measurement.communication is not None:
            session.note(f"{result.key}: not profiled: a data-parallel case runs one process per GPU")
            profiled = False
        if profiled:  # the profilers load only here: a measuring process needs none
            from trainperf.profile.profiler import selected

            profiled = selected(session.settings.profile_cases, result.key, bool(checks.failures(result.checks)))
        late = self.late if self.late is not None and self.late.profiles_at_end else None
        if profiled and late is None:
            from trainperf.hooks.attach_profile import attach_profiles

            attach_profiles(session, [(self.selector or self.nodeid, result)])
        entry = record_case(session, result)
        if profiled and late is not None:
            from trainperf.hooks.attach_profile import ToProfile

            late.profile_later(session, ToProfile(self.nodeid, self.selector or self.nodeid, result, entry))
        return entry

    def _unfinished(self, key: str, verdict: Verdict, reason: str) -> None:
        """A case that ended without a measurement: every report lists it, JUnit too, and the run
        document on disk says so at once."""
        self.session.record_unfinished(key, self.nodeid, verdict, reason)
        save_progress(self.session)
        for name, value in junit.unfinished_properties(key, verdict, reason).items():
            self.record_property(name, value)

    def _spec(self, workload: Workload, optimization: Optimization) -> CaseSpec:
        """The case at this device's size, with its iterations: the session's or the marker's, else the workload's."""
        size, options = self.session.size, self.options
        default_warmup, default_iters = workload.iterations(size)
        warmup = default_warmup if options.warmup is None else options.warmup
        iters = default_iters if options.iters is None else options.iters
        return CaseSpec(workload, optimization, self.session.device, size, warmup, iters)

    def _skip_where_unavailable(self, spec: CaseSpec) -> None:
        optimization, device = spec.optimization, spec.device
        if optimization.needs_cuda and device.type != "cuda":
            pytest.skip(f"{spec.key} runs on CUDA only: {optimization.needs_cuda}")
        if missing := optimization.missing_package():
            pytest.skip(f"{spec.key} {missing}")
        if optimization.ddp is not None:
            from trainperf.measure.distributed import unavailable

            reason = unavailable(device)
            if reason is not None:
                pytest.skip(f"{spec.key}: {reason}")

    def _measure_runs(self, spec: CaseSpec) -> Measurement:
        """The case measured in as many independent runs as the session asks (several when recording
        baselines: their spread is its run-to-run noise): here, then each further one in a fresh process."""
        runs = self.session.settings.runs_per_case
        first = self._measure(spec)
        if runs == 1:
            return first
        measured = [first, *(self._measure_afresh(spec) for _ in range(runs - 1))]
        if self.session.settings.update_baselines:
            measured = self._agreeing(spec, measured)
        return combined(measured)

    def _agreeing(self, spec: CaseSpec, measured: list[Measurement]) -> list[Measurement]:
        """A recording's runs, each far from the others measured again once; the case fails, not
        recorded, where they still disagree. A busy host is noted either way."""
        medians = [stats.summarize(m.samples_ms).median for m in measured]
        spreads = [stats.iteration_spread(m.samples_ms, 1) for m in measured]
        wild = recording.wild_runs(medians, spreads)
        if wild:
            for i in wild:
                measured[i] = self._measure_afresh(spec)
            again = {i: stats.summarize(measured[i].samples_ms).median for i in wild}
            now = [again.get(i, median) for i, median in enumerate(medians)]
            spreads = [stats.iteration_spread(m.samples_ms, 1) for m in measured]
            if recording.wild_runs(now, spreads):
                pytest.fail(recording.refusal(spec.key, medians, again, spreads), pytrace=False)
            self.session.note(recording.remeasured_note(spec.key, medians, again))
        busy = recording.busy_host([m.clocks.get("during") or {} for m in measured])
        if busy is not None:
            self.session.note(f"{spec.key}: {busy}")
        return measured

    def _measure_afresh(self, spec: CaseSpec, reference: Optimization | None = None) -> Measurement:
        """The case (or, given, its reference) measured in a fresh process; here again, with a note, if the
        child fails, unless a case takes several runs (one in this process would understate its noise). A
        data-parallel case needs no child: each run spawns its ranks afresh (under a launcher, each rank's)."""
        if reference is None and spec.optimization.ddp is not None:
            return self._measure(spec)
        children = self.session.children
        what = "case" if reference is None else REFERENCE
        if children is not None:
            try:
                node = self.selector or self.nodeid
                return measuring.measure(children, node, what, spec.warmup, spec.iters, self._limit_s(spec))
            except ChildError as error:
                if (runs := self.session.settings.runs_per_case) > 1:  # no second measurement is taken then
                    pytest.fail(f"{spec.key}: not recorded: each of its {runs} runs must be fresh: {error}", False)
                self.session.note(f"{spec.key}: {error}; measured in the test process instead")
        return self._measure(spec) if reference is None else run_case(spec.but(reference))

    def _judged(self, spec: CaseSpec, declared: Optimization) -> CaseResult:
        """The case judged; one that looks slower or short of its speedup is measured again (``_confirmed``)."""
        late = self.late
        held = None if late is None else late.take(self.session, self.nodeid, spec.key)
        if held is not None:  # this item's run at the end of the session
            return self._confirmed(spec, held.first, held.suspect, declared, time.monotonic() - held.at)
        measurement = self._measure_runs(spec)
        first = self._result(spec, measurement, self._reference(spec, measurement, declared))
        suspect = self._second_measurement_due(spec, first)
        if suspect and late is not None and late.may_hold(self.nodeid):
            late.hold(self.session, self.nodeid, spec.key, first, suspect)
            why = "; ".join(suspect.values())
            save_progress(self.session)
            self.session.progress(f"{spec.key}: measured again at the end of the session ({why})")
            raise ConfirmLater(spec.key)
        return self._confirmed(spec, first, suspect, declared, None) if suspect else first

    def _second_measurement_due(self, spec: CaseSpec, first: CaseResult) -> dict[str, str]:
        """The failed checks' messages that a second measurement may change (``policy.measured_again``),
        counted against --perf-confirmations; empty where none may be taken."""
        session = self.session
        device_type = spec.device.type
        has_baseline = session.stored_baseline(spec.key) is not None
        suspect = policy.measured_again(first.checks, has_baseline=has_baseline, device_type=device_type)
        if not suspect:
            return {}
        why_not = policy.why_not_again(
            standing=policy.standing(first.checks, device_type=device_type),
            used=session.confirmations,
            budget=session.settings.confirmations,
            launched_data_parallel=session.launch is not None and spec.optimization.ddp is not None,
            runs=len(first.measurement.run_medians_ms),
        )
        if why_not is not None:
            if why_not:
                session.note(f"{spec.key}: {why_not}")
            return {}
        session.confirmations += 1
        return suspect

    def _confirmed(
        self, spec: CaseSpec, first: CaseResult, suspect: dict[str, str], declared: Optimization, waited_s: float | None
    ) -> CaseResult:
        """The case measured again in a fresh process (its reference too where the speedup fell short), at
        once (``waited_s`` None) or at the end of the session; the verdict is the second's, its messages both."""
        session, found = self.session, "; ".join(suspect.values())
        started = time.perf_counter()
        if waited_s is None:
            session.progress(f"{spec.key}: measuring again before failing it ({found})")
        measurement = self._measure_afresh(spec)
        reference = session.references[(spec.workload.name, spec.warmup, spec.iters)]
        if spec.optimization.name == REFERENCE:
            reference = measurement  # a reference's speedup is over itself, never over its first measurement
        elif policy.reference_again(suspect):
            reference = self._measure_afresh(spec, declared)
        second = self._result(spec, measurement, reference)
        second.checks = [policy.with_first(check, suspect.get(check.name)) for check in second.checks]
        seconds = time.perf_counter() - started
        second.confirmation = {
            "first": list(suspect.values()),
            "seconds": seconds,
            "after_first_s": None if waited_s is None else round(waited_s, 1),
            "reference_again": policy.reference_again(suspect),
        }
        held = "confirmed" if checks.failures(second.checks) else "not confirmed"
        when = f"({seconds:.0f} s" + (")" if waited_s is None else f", {waited_s:.0f} s after the first)")
        at = "" if waited_s is None else " at the end of the session"
        session.note(f"{spec.key}: {held} by a second measurement{at} {when}, {second.figures}; the first: {found}")
        return second

    def _measure(self, spec: CaseSpec) -> Measurement:
        """The case's run; running out of device memory fails this case alone, its memory freed."""
        if spec.optimization.ddp is not None:
            return self._measure_data_parallel(spec)
        try:
            return self._limited(spec)
        except torch.OutOfMemoryError as error:
            out_of_memory = first_line(error, 300)
        free_memory(spec.device)  # outside the except block: its traceback no longer holds the case's tensors
        pytest.fail(f"{spec.key}: ran out of {spec.device.type} memory: {out_of_memory} (memory freed)", False)

    def _measure_data_parallel(self, spec: CaseSpec) -> Measurement:
        """One process per GPU (two on the CPU); any rank's failure fails the case, naming the ranks."""
        from trainperf.measure import distributed
        from trainperf.spec.case import case_folder

        report = self.session.settings.report
        keep = None if report is None else case_folder(report / "data-parallel", spec.key)
        try:
            return distributed.run_case(spec, keep, self._limit_s(spec))
        except distributed.DistributedError as error:
            failure = str(error)
        if self.session.launch is not None and self.stop_session is not None:
            # the launcher's group cannot train another case once a rank failed in it
            self.stop_session(f"trainperf: {spec.key} failed in the launcher's group; its other cases cannot run")
        pytest.fail(f"{spec.key}: data-parallel run failed: {failure}", pytrace=False)

    def _reference(self, spec: CaseSpec, measurement: Measurement, declared: Optimization) -> Measurement:
        """The workload's reference case of this run; measured now if no reference case ran yet."""
        slot = (spec.workload.name, spec.warmup, spec.iters)
        if spec.optimization.name == REFERENCE:
            self.session.references[slot] = measurement
        if slot not in self.session.references:
            what = f"the speedup of {spec.optimization.name}"
            self.session.note(f"{spec.workload.name}: reference case measured on demand for {what}")
            self.session.references[slot] = self._limited(spec.but(declared))
        return self.session.references[slot]

    def _limit_s(self, spec: CaseSpec) -> float:
        """The case's time limit: --perf-timeout, the marker's, or the default."""
        default = time_limit.default_limit_s(spec.warmup, spec.iters)
        return default if self.options.timeout is None else self.options.timeout

    def _limited(self, spec: CaseSpec) -> Measurement:
        """``run_case(spec)`` under the case's time limit."""
        seconds = self._limit_s(spec)
        why = time_limit.unavailable()
        if why is not None:
            self.session.note(f"no per-case time limit: {why}")
            return self._run_recording_memory(spec)
        how = "raise it with --perf-timeout=S or @pytest.mark.trainperf(timeout=S)"
        with time_limit.time_limit(seconds, spec.key, how):
            return self._run_recording_memory(spec)

    def _run_recording_memory(self, spec: CaseSpec) -> Measurement:
        """``run_case(spec)``; under --perf-memory-snapshot, one more iteration with the memory history on."""
        trace = self._trace(spec)
        if not self.session.settings.memory_snapshot:
            return run_case(spec, trace=trace)
        from trainperf.measure import memory_snapshot

        return memory_snapshot.run_recording(spec, self.session.settings.report, self.session.note, trace)

    def _trace(self, spec: CaseSpec) -> Path | None:
        """Where this run's counted iterations leave the trace that gives the case's Top-5, for a case that
        --profile-cases names (written over an earlier run's, or removed where it cannot be). None
        without --profile, with nsys (which captures its own), and under ``failed``: a case's verdict comes
        after its count, so a failed case has a child find its Top-5, and a night that fails nothing writes
        no trace."""
        profiling, selection = self.session.profiling, self.session.settings.profile_cases
        if profiling is None or not profiling.backend.reads_trace or selection == "failed":
            return None
        from trainperf.profile.profiler import selected

        if not selected(selection, spec.key, failed=False):
            return None
        return profiling.trace(spec.key)

    def _result(self, spec: CaseSpec, measurement: Measurement, reference: Measurement) -> CaseResult:
        session, workload, optimization = self.session, spec.workload, spec.optimization
        summary = stats.summarize(measurement.samples_ms)
        reference_median = stats.summarize(reference.samples_ms).median
        rate = measurement.per_second(measurement.samples_per_iteration, summary.median)
        speedup = rate / reference.per_second(reference.samples_per_iteration, reference_median)
        stored, calls = session.stored_baseline(spec.key), session.stored_calls(spec.key)
        figures = policy.Figures(
            key=spec.key,
            optimization=optimization,
            metric=workload.metric,
            measurement=measurement,
            reference=reference,
            speedup=speedup,
            stored=stored,
            stored_calls=calls,
            reference_stored=session.stored_baseline(case_key(workload.name, REFERENCE)),
            device_type=spec.device.type,
            strict=session.settings.strict and not session.settings.update_baselines,
            stored_work=session.stored_work(spec.key),
            workers_at_once=workers.workers_at_once(os.environ, session.settings.gpu_per_worker),
            version_changes=session.version_changes(spec.key),
            upgrade_fails=session.settings.upgrade_fails,
        )
        judged = policy.judge(figures, update_baselines=session.settings.update_baselines)
        return CaseResult(
            key=spec.key,
            nodeid=self.nodeid,
            workload=workload.name,
            optimization=optimization.name,
            knobs=optimization.knobs(),
            metric_name=workload.metric.name,
            measurement=measurement,
            summary=summary,
            speedup=speedup,
            baseline_median_ms=None if stored is None else stored.noise().center_ms,
            checks=judged,
            peak_flops=session.peak_flops,
            baseline_summary=None if stored is None else stats.summarize(stored.samples_ms),
            detection=policy.detection(
                optimization,
                stored,
                calls,
                measurement,
                session.stored_work(spec.key),
                host_paced=bool(figures.host_paced_shares),
            ),
            reference_samples_per_iteration=reference.samples_per_iteration,
        )
