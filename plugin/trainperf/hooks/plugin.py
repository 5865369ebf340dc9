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
from trainperf.hooks.session import TrainPerfSession
from trainperf.hooks.termination import SigtermAsInterrupt

if TYPE_CHECKING:
    from trainperf.hooks.fixture import TrainPerf

SESSION_KEY = pytest.StashKey[TrainPerfSession]()
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
    sigterm, late = None, None
    if child_run is None and not hasattr(config, "workerinput"):  # the session's own process, not a worker
        xdist.refuse_shared_recording(settings, config)
        sigterm = SigtermAsInterrupt()  # installed once the session has cases
        if settings.confirmations > 0 or settings.profile != "off":
            # -x and --maxfail stop at a failure as it is reported: a profiled case's profile comes at once then
            late = LateConfirmation(profiles_at_end=not config.option.maxfail)
            config.pluginmanager.register(late, PLUGIN_NAME)
    twin_only = bool(config.getoption("trainperf_twin_only"))
    config.stash[SESSION_KEY] = TrainPerfSession(settings, child_run, config, twin_only, sigterm, late)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller under --update-baselines keeps the baseline files as they were, to show
    every worker's changes at the end (xdist's controller is known only once configured)."""
    trainperf = session.config.stash.get(SESSION_KEY, None)
    if trainperf is not None and trainperf.settings.update_baselines and xdist.is_controller(session.config):
        from trainperf.hooks.publish import snapshot_baselines

        trainperf.baselines_before = snapshot_baselines(trainperf.settings.baseline_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, for each worker it starts: where workers claim their GPUs."""
    trainperf = node.config.stash.get(SESSION_KEY, None)
    if trainperf is not None and trainperf.settings.gpu_per_worker:
        xdist.hand_out_claims(node.config, node.workerinput)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller, as each worker ends: the run document it sent, for the summary."""
    trainperf = node.config.stash.get(SESSION_KEY, None)
    if trainperf is not None and (document := xdist.received_run(node)) is not None:
        trainperf.worker_documents.append(document)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist.clean_up(config)
    trainperf = config.stash.get(SESSION_KEY, None)
    if trainperf is not None and trainperf.sigterm is not None:
        trainperf.sigterm.uninstall()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Load this device's baselines once, before any case runs: an unusable file stops the run here. A
    session of cases ends on SIGTERM as on Ctrl-C (``termination``); other sessions keep Python's default."""
    from trainperf.store import baselines

    cases = [item for item in items if "trainperf" in getattr(item, "fixturenames", ())]
    if not cases:
        return
    if (sigterm := config.stash[SESSION_KEY].sigterm) is not None:
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

    trainperf = request.config.stash[SESSION_KEY]
    options = _case_options(request.node, trainperf.settings)
    session = trainperf.get()
    late = trainperf.late if session.launch is None else None

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
    args, kwargs = (tuple(marker.args), marker.kwargs) if marker else ((), {})
    try:
        return case_options(settings, args, kwargs)
    except SettingError as error:
        raise pytest.UsageError(f"{item.nodeid}: {error}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict[str, Any]) -> None:
    """pytest-benchmark's --benchmark-json and --benchmark-autosave files carry trainperf's cases too (it
    writes them only when its own ``benchmark`` fixture ran; else --perf-report's run.json is the file)."""
    trainperf = config.stash.get(SESSION_KEY, None)
    if trainperf is not None and trainperf.session is not None:
        output_json["benchmarks"].extend(trainperf.session.entries)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With pytest-html, a profiled case's row gets its Top-5 table and roofline chart."""
    outcome = yield
    report = outcome.get_result()
    trainperf = item.config.stash.get(SESSION_KEY, None)
    html = item.config.pluginmanager.hasplugin("html")
    if report.when != "call" or trainperf is None or trainperf.session is None or not html:
        return
    entries = [entry for entry in trainperf.session.entries if entry["fullname"] == item.nodeid]
    if entries:
        from trainperf.report.html_extras import extras_for

        report.extras = [*getattr(report, "extras", []), *extras_for(entries[-1])]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if (trainperf := session.config.stash.get(SESSION_KEY, None)) is not None:
        trainperf.finish(session, exitstatus)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if (trainperf := config.stash.get(SESSION_KEY, None)) is not None:
        trainperf.summary(terminalreporter)
