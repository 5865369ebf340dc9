"""The one session object (pytest-benchmark's ``BenchmarkSession`` is the model): the hooks hand it
everything. It holds the settings, the SIGTERM handler, the late confirmation and, once the first
trainperf case is collected (it imports torch), the run's record (``PerfSession``) with its device, its
terminal progress lines and, under ``--profile``, its profiler set-up; at the session's end it has the
record published and its summary written (``publish``, ``report.terminal``), or, as pytest-xdist's
controller, the workers' merged."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from trainperf.child.protocol import ChildRun
from trainperf.config.settings import Settings
from trainperf.hooks import xdist
from trainperf.hooks.late_confirmation import LateConfirmation
from trainperf.hooks.termination import SigtermAsInterrupt
from trainperf.measure import launcher, workers
from trainperf.store.provenance import git_commit

if TYPE_CHECKING:
    import torch

    from trainperf.child.measuring import Children
    from trainperf.record.document import RunDocument
    from trainperf.record.session import PerfSession


class TrainPerfSession:
    """The session's state: the settings until a case needs the record, the record then; the SIGTERM
    handler and the late confirmation of the session's own process; the xdist controller's merge."""

    def __init__(
        self,
        settings: Settings,
        child: ChildRun | None,
        config: pytest.Config,
        twin_only: bool,
        sigterm: SigtermAsInterrupt | None = None,
        late: LateConfirmation | None = None,
    ) -> None:
        self.settings = settings
        self.child = child
        self.config = config
        self.twin_only = twin_only  # another plugin owns --profile: ours is --perf-profile alone
        self.sigterm = sigterm  # the session's own process only: installed once the session has cases
        self.late = late  # the session's own process only, where cases are confirmed or profiled at its end
        self.session: PerfSession | None = None
        self.merged_lines: list[str] = []  # the xdist controller's summary of what its workers ran
        self.baselines_before: dict[Path, dict[str, dict[str, Any]]] | None = None  # the controller's, to merge
        self.worker_documents: list[RunDocument] = []  # the controller's: what workers sent without --perf-report

    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """The session's end: the record's notes on how it ended, the cases left held named, the record
        published; or, as pytest-xdist's controller, the workers' run documents and baselines merged."""
        perf = self.session
        if perf is not None:
            from trainperf.hooks.publish import publish

            if self.sigterm is not None and self.sigterm.received:
                perf.note("stopped by SIGTERM (a time limit or the runner): the cases that finished are reported")
            elif exitstatus == pytest.ExitCode.INTERRUPTED and isinstance(session.shouldstop, str):
                perf.note(
                    f"stopped ({session.shouldstop.removeprefix('trainperf: ')}): the cases that finished are reported"
                )
            elif exitstatus == pytest.ExitCode.INTERRUPTED:
                perf.note("interrupted (Ctrl-C or SIGINT): the cases that finished are reported")
            if self.late is not None:
                self._keep_unjudged(perf, self.late)
            if exitstatus == pytest.ExitCode.INTERRUPTED and self.settings.update_baselines:
                finished = len(perf.pending)
                perf.note(f"interrupted: the {finished} case(s) that finished are written to the baselines; "
                          "the others keep their stored entries")  # fmt: skip
            if not publish(perf):  # the baselines could not be written: the usage status, as for a bad file
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            xdist.send_run(session.config, perf)
            if perf.launch is not None:
                from trainperf.measure.distributed import leave_group

                leave_group()
        elif xdist.is_controller(session.config):
            from trainperf.hooks.publish import merge_workers, merged_changes, merged_summary

            if self.settings.report is not None:
                self.merged_lines = merge_workers(Path(self.settings.report))
            elif self.worker_documents:
                from trainperf.record.document import merge

                self.merged_lines = merged_summary(merge(self.worker_documents))
            if self.baselines_before is not None:
                report = self.settings.report
                self.merged_lines += merged_changes(self.baselines_before, self.settings.baseline_dir, report)

    @staticmethod
    def _keep_unjudged(perf: PerfSession, late: LateConfirmation) -> None:
        """Name the items the session left waiting for their second measurement, and list each of their
        cases among those that did not finish, with its first measurement's figures (``PerfSession.held``)."""
        if unjudged := late.unjudged():
            perf.note(f"not judged: the session ended before their second measurement: {', '.join(unjudged)}")
        perf.leave_unjudged()

    def summary(self, terminalreporter: Any) -> None:
        """The xdist controller's merged lines, or the session's cases table and notes (not a child's: its
        parent reports)."""
        if self.merged_lines:
            terminalreporter.write_sep("=", "trainperf: the xdist workers' cases")
            for line in self.merged_lines:
                terminalreporter.write_line(line)
        if self.session is None or self.child is not None:
            return
        from trainperf.report.terminal import write_summary

        write_summary(self.session, terminalreporter)

    def get(self) -> PerfSession:
        if self.session is None:
            self.session = self._start()
        return self.session

    def _start(self) -> PerfSession:
        from trainperf.judge.policy import workers_note
        from trainperf.measure import device as devices
        from trainperf.record.session import PerfSession

        _quiet_torch_trace()
        try:
            launch = launcher.from_environment(os.environ)
            if launch is not None and self.settings.device != "cpu":
                devices.use_local_gpu(launch.local_rank)
            chosen = devices.choose_device(self.settings.device)
        except (RuntimeError, launcher.LaunchError) as error:
            raise pytest.UsageError(str(error)) from None
        commit = git_commit(self.config.rootpath)
        session = PerfSession(
            self.settings, chosen, devices.fingerprint(chosen), child=self.child, launch=launch, commit=commit
        )
        session.progress = self._progress
        session.children = self._children(chosen)  # before profiling: its children run the same way
        if self.twin_only:
            session.note("--profile belongs to another plugin here: use --perf-profile for trainperf")
        if (count := workers.workers_at_once(os.environ, self.settings.gpu_per_worker)) > 1:
            session.note(workers_note(count))
        if self.settings.profile != "off" and self.child is None:
            self._set_up_profiling(session, chosen)
        return session

    def _progress(self, text: str) -> None:
        """One ``trainperf: ...`` line on the terminal now, even while the test's output is captured."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.ensure_newline()
            reporter.write_line(f"trainperf: {text}")

    def _children(self, device: torch.device) -> Children:
        """How a child process re-runs a test node as this session would: rootdir, ini file, device."""
        from trainperf.child.measuring import Children

        config = self.config
        args = ["--rootdir", str(config.rootpath), f"--perf-device={device.type}"]
        if config.inipath is not None:
            args += ["-c", str(config.inipath)]
        return Children(config.rootpath, tuple(args))

    def _set_up_profiling(self, session: PerfSession, device: torch.device) -> None:
        """The session's profiler backend, the profiles' folder and what the child's pytest needs."""
        import os

        import torch

        from trainperf.profile.profiler import ProfileSetup, choose_backend

        settings, config = self.settings, self.config
        backend = choose_backend(
            settings.profile, device.type, os.environ, torch.__version__, session.note, settings.profile_timeout
        )
        report = config.rootpath / ".trainperf" if settings.report is None else Path(settings.report).resolve()
        root = report / "profiles"
        children = session.children
        assert children is not None
        timeout = settings.profile_timeout
        session.profiling = ProfileSetup(backend, root, children.rootdir, children.pytest_args, timeout)
        session.note(f"profiles written under {root}")


TORCH_TRACE = "torch.__trace"  # torch's structured trace, for tlparse's files, not for a terminal


def _quiet_torch_trace() -> None:
    """torch's structured-trace records (an empty line per compiled graph) reach the terminal only where
    that logger propagates to torch's own stderr handler: keep them off it, so that a failing compiled
    case's captured output shows its error, not pages of them. TORCH_TRACE's own files are untouched."""
    for handler in logging.getLogger("torch").handlers:
        handler.addFilter(lambda record: record.name != TORCH_TRACE)
