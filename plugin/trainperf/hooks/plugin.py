"""pytest hooks of trainperf: options, ini keys, marker, the ``trainperf`` fixture; each hook delegates."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from trainperf.child.protocol import ChildRun
from trainperf.config.options import OPTIONS, SettingError
from trainperf.config.settings import CaseOptions, Settings, case_options
from trainperf.config.sources import from_pytest
from trainperf.hooks import xdist
from trainperf.hooks.late_confirmation import PLUGIN_NAME, LateConfirmation
from trainperf.hooks.lazy_session import LazySession
from trainperf.hooks.termination import SigtermAsInterrupt

if TYPE_CHECKING:
    from trainperf.hooks.fixture import TrainPerf
    from trainperf.record.session import PerfSession

SESSION_KEY = pytest.StashKey[LazySession]()
SIGTERM_KEY = pytest.StashKey[SigtermAsInterrupt]()
MARKER = "trainperf"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("trainperf", "training performance (trainperf)")
    for spec in OPTIONS.values():
        kwargs: dict[str, Any] = {"dest": f"trainperf_{spec.name}", "default": None, "help": spec.help}
        if spec.is_flag:
            kwargs["action"] = "store_true"
        if spec.name == "profile":
            _add_profile_option(group, kwargs)
        else:
            group.addoption(spec.flag, **kwargs)
        parser.addini(spec.ini, spec.help + f" (env {spec.env})", default="")
    # set by --profile on the child process it starts; not for users
    group.addoption("--trainperf-child", dest="trainperf_child", default=None, help=argparse.SUPPRESS)
    group.addoption(
        "--trainperf-child-torch", dest="trainperf_child_torch", action="store_true", help=argparse.SUPPRESS
    )
    group.addoption("--trainperf-child-measure", dest="trainperf_child_measure", default=None, help=argparse.SUPPRESS)


def _add_profile_option(group: Any, kwargs: dict[str, Any]) -> None:
    """``--profile`` with a ``--perf-profile`` twin; the twin alone when another plugin owns ``--profile``
    (which a hidden option's default records)."""
    try:
        group.addoption("--profile", "--perf-profile", **kwargs)
        twin_only = False
    except ValueError:
        group.addoption("--perf-profile", **kwargs)
        twin_only = True
    group.addoption("--trainperf-twin-only", dest="trainperf_twin_only", default=twin_only, help=argparse.SUPPRESS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(iters=None, warmup=None): per-test timed and warm-up iterations for trainperf cases"
    )
    try:
        settings = from_pytest(config)
    except SettingError as error:
        raise pytest.UsageError(str(error)) from None
    child = config.getoption("trainperf_child")
    child_run = None
    if child is not None:
        torch_trace, measure = config.getoption("trainperf_child_torch"), config.getoption("trainperf_child_measure")
        child_run = ChildRun(Path(child), bool(torch_trace), measure)
    xdist.set_up(settings, config)
    if child_run is None and not hasattr(config, "workerinput"):  # the session's own process, not a worker
        xdist.refuse_shared_recording(settings, config)
        config.stash[SIGTERM_KEY] = SigtermAsInterrupt()  # installed once the session has cases
        if settings.confirmations > 0 or settings.profile != "off":
            # -x and --maxfail stop at a failure as it is reported: a profiled case's profile comes at once then
            config.pluginmanager.register(LateConfirmation(profiles_at_end=not config.option.maxfail), PLUGIN_NAME)
    twin_only = bool(config.getoption("trainperf_twin_only"))
    config.stash[SESSION_KEY] = LazySession(settings, child_run, config, twin_only)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller under --update-baselines keeps the baseline files as they were, to show
    every worker's changes at the end (xdist's controller is known only once configured)."""
    lazy = session.config.stash.get(SESSION_KEY, None)
    if lazy is not None and lazy.settings.update_baselines and xdist.is_controller(session.config):
        from trainperf.hooks.publish import snapshot_baselines

        lazy.baselines_before = snapshot_baselines(lazy.settings.baseline_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, for each worker it starts: where workers claim their GPUs."""
    lazy = node.config.stash.get(SESSION_KEY, None)
    if lazy is not None and lazy.settings.gpu_per_worker:
        xdist.hand_out_claims(node.config, node.workerinput)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller, as each worker ends: the run document it sent, for the summary."""
    lazy = node.config.stash.get(SESSION_KEY, None)
    if lazy is not None and (document := xdist.received_run(node)) is not None:
        lazy.worker_documents.append(document)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist.clean_up(config)
    if SIGTERM_KEY in config.stash:
        config.stash[SIGTERM_KEY].uninstall()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Load this device's baselines once, before any case runs: an unusable file stops the run here. A
    session of cases ends on SIGTERM as on Ctrl-C (``termination``); other sessions keep Python's default."""
    from trainperf.store import baselines

    cases = [item for item in items if "trainperf" in getattr(item, "fixturenames", ())]
    if not cases:
        return
    if (sigterm := config.stash.get(SIGTERM_KEY, None)) is not None:
        sigterm.install()
    settings = config.stash[SESSION_KEY].settings
    for item in cases:
        _case_options(item, settings)  # a bad marker is a usage error before anything runs
    try:
        perf = config.stash[SESSION_KEY].get()
        if perf.child is not None:  # a fresh-process or profiler child measures; its parent judges
            return
        perf.stored = baselines.load(perf.baseline_file, perf.settings.sources["baseline_dir"])
    except baselines.BaselineError as error:
        raise pytest.UsageError(str(error)) from None
    lacking = None if perf.settings.update_baselines else baselines.lacking_work(perf.baseline_file, perf.stored)
    if lacking is not None:
        perf.note(lacking)


@pytest.fixture
def trainperf(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> TrainPerf:
    """Runs training cases: ``trainperf.run(workload, optimization, reference=...)``."""
    from trainperf.hooks.fixture import TrainPerf

    options = _case_options(request.node, request.config.stash[SESSION_KEY].settings)
    session = request.config.stash[SESSION_KEY].get()
    late = request.config.pluginmanager.get_plugin(PLUGIN_NAME) if session.launch is None else None

    def stop_session(why: str) -> None:
        request.session.shouldstop = why

    return TrainPerf(
        session,
        request.node.nodeid,
        options,
        record_property,
        late,
        selector(request.node),
        stop_session,
    )


def selector(item: pytest.Item) -> str:
    """The argument that selects ``item`` in a child pytest: its file's absolute path, then its name
    within the file (its node id names the file from the rootdir, or not at all outside it)."""
    within = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return f"{item.path}::{within}"


def _case_options(item: pytest.Item, settings: Settings) -> CaseOptions:
    """The iterations and time limit the session or the item's ``trainperf`` marker sets; a usage error
    naming the item for a bad marker."""
    marker = item.get_closest_marker(MARKER)
    try:
        return case_options(settings, tuple(marker.args), marker.kwargs) if marker else case_options(settings, (), {})
    except SettingError as error:
        raise pytest.UsageError(f"{item.nodeid}: {error}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict[str, Any]) -> None:
    """pytest-benchmark's --benchmark-json and --benchmark-autosave files carry trainperf's cases too (it
    writes them only when its own ``benchmark`` fixture ran; else --perf-report's run.json is the file)."""
    lazy = config.stash.get(SESSION_KEY, None)
    if lazy is not None and lazy.session is not None:
        output_json["benchmarks"].extend(lazy.session.entries)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With pytest-html, a profiled case's row gets its Top-5 table and roofline chart."""
    outcome = yield
    report = outcome.get_result()
    lazy = item.config.stash.get(SESSION_KEY, None)
    if report.when != "call" or lazy is None or lazy.session is None or not item.config.pluginmanager.hasplugin("html"):
        return
    entries = [entry for entry in lazy.session.entries if entry["fullname"] == item.nodeid]
    if entries:
        from trainperf.report.html_extras import extras_for

        report.extras = [*getattr(report, "extras", []), *extras_for(entries[-1])]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    lazy = session.config.stash.get(SESSION_KEY, None)
    if lazy is None:
        return
    if lazy.session is not None:
        from trainperf.hooks.publish import publish

        sigterm = session.config.stash.get(SIGTERM_KEY, None)
        if sigterm is not None and sigterm.received:
            lazy.session.note("stopped by SIGTERM (a time limit or the runner): the cases that finished are reported")
        elif exitstatus == pytest.ExitCode.INTERRUPTED and isinstance(session.shouldstop, str):
            lazy.session.note(
                f"stopped ({session.shouldstop.removeprefix('trainperf: ')}): the cases that finished are reported"
            )
        elif exitstatus == pytest.ExitCode.INTERRUPTED:
            lazy.session.note("interrupted (Ctrl-C or SIGINT): the cases that finished are reported")
        late = session.config.pluginmanager.get_plugin(PLUGIN_NAME)
        if late is not None:
            _keep_unjudged(lazy.session, late)
        if exitstatus == pytest.ExitCode.INTERRUPTED and lazy.settings.update_baselines:
            finished = len(lazy.session.pending)
            lazy.session.note(f"interrupted: the {finished} case(s) that finished are written to the baselines; "
                              "the others keep their stored entries")  # fmt: skip
        if not publish(lazy.session):  # the baselines could not be written: the usage status, as for a bad file
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        xdist.send_run(session.config, lazy.session)
        if lazy.session.launch is not None:
            from trainperf.measure.distributed import leave_group

            leave_group()
    elif xdist.is_controller(session.config):
        from trainperf.hooks.publish import merge_workers, merged_changes, merged_summary

        if lazy.settings.report is not None:
            lazy.merged_lines = merge_workers(Path(lazy.settings.report))
        elif lazy.worker_documents:
            from trainperf.record.document import merge

            lazy.merged_lines = merged_summary(merge(lazy.worker_documents))
        if lazy.baselines_before is not None:
            report = lazy.settings.report
            lazy.merged_lines += merged_changes(lazy.baselines_before, lazy.settings.baseline_dir, report)


def _keep_unjudged(perf: PerfSession, late: LateConfirmation) -> None:
    """Name the items the session left waiting for their second measurement, and list each of their
    cases among those that did not finish, with its first measurement's figures (``PerfSession.held``)."""
    if unjudged := late.unjudged():
        perf.note(f"not judged: the session ended before their second measurement: {', '.join(unjudged)}")
    perf.leave_unjudged()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lazy = config.stash.get(SESSION_KEY, None)
    if lazy is not None and lazy.merged_lines:
        terminalreporter.write_sep("=", "trainperf: the xdist workers' cases")
        for line in lazy.merged_lines:
            terminalreporter.write_line(line)
    if lazy is None or lazy.session is None or lazy.child is not None:  # a child's parent reports
        return
    from trainperf.report.terminal import write_summary

    write_summary(lazy.session, terminalreporter)
