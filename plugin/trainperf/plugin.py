"""pytest wiring: options, ini keys, marker, the ``trainperf`` fixture and the session hooks."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from trainperf import workers
from trainperf.baselines import BaselineError
from trainperf.profile.child import ChildRun
from trainperf.settings import OPTIONS, Resolved, SettingError, build_settings, resolve

SESSION_KEY = pytest.StashKey["Any"]()
CLAIMS_KEY = pytest.StashKey[str]()  # the controller's folder of GPU claims
CLAIM_KEY = pytest.StashKey[IO[str]]()  # a worker's held GPU claim
CLAIMS_INPUT = "trainperf_gpu_claims"
MARKER = "trainperf"
_profile_flag = {"twin_only": False}  # set when another plugin already owns --profile


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


def _add_profile_option(group: Any, kwargs: dict[str, Any]) -> None:
    """``--profile`` with a ``--perf-profile`` twin; the twin alone when another plugin owns ``--profile``."""
    _profile_flag["twin_only"] = False
    try:
        group.addoption("--profile", "--perf-profile", **kwargs)
    except ValueError:
        group.addoption("--perf-profile", **kwargs)
        _profile_flag["twin_only"] = True


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(iters=None, warmup=None): per-test timed and warm-up iterations for trainperf cases"
    )
    try:
        values = {
            name: resolve(
                spec, cli=config.getoption(f"trainperf_{name}"), environ=os.environ, ini=str(config.getini(spec.ini))
            )
            for name, spec in OPTIONS.items()
        }
    except SettingError as error:
        raise pytest.UsageError(str(error)) from None
    child = config.getoption("trainperf_child")
    child_run = None if child is None else ChildRun(Path(child), bool(config.getoption("trainperf_child_torch")))
    settings = build_settings(values, config.rootpath)
    _set_up_workers(settings, config)
    config.stash[SESSION_KEY] = _LazySession(settings, child_run, config)


def _is_xdist_controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


def _set_up_workers(settings: Any, config: pytest.Config) -> None:
    """With --perf-gpu-per-worker, each xdist worker claims a GPU of its own and runs on that GPU's share
    of the host's cores; the controller clears the run files of earlier runs that it will merge."""
    claims = getattr(config, "workerinput", {}).get(CLAIMS_INPUT)
    if settings.gpu_per_worker and claims is not None:
        visible = workers.visible_gpus(os.environ, workers.nvml_gpu_count())
        try:
            index, gpu, held = workers.claim_gpu(visible, Path(claims))
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[CLAIM_KEY] = held  # open for the worker's lifetime
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # before CUDA starts: torch reads it then
        workers.pin_to_share(index, min(len(visible), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    if _is_xdist_controller(config) and settings.report is not None:
        for stale in workers.worker_files(Path(settings.report)):
            stale.unlink()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, for each worker it starts (a crashed one's replacement too): the folder
    where workers claim their GPUs."""
    config = node.config
    lazy = config.stash.get(SESSION_KEY, None)
    if lazy is None or not lazy.settings.gpu_per_worker:
        return
    if CLAIMS_KEY not in config.stash:
        config.stash[CLAIMS_KEY] = tempfile.mkdtemp(prefix="trainperf-gpu-claims-")
    node.workerinput[CLAIMS_INPUT] = config.stash[CLAIMS_KEY]


def pytest_unconfigure(config: pytest.Config) -> None:
    claims = config.stash.get(CLAIMS_KEY, None)
    if claims is not None:
        shutil.rmtree(claims, ignore_errors=True)


class _LazySession:
    """Creates the PerfSession (which imports torch) only when a trainperf case is collected."""

    def __init__(self, settings: Any, child: ChildRun | None, config: pytest.Config) -> None:
        self.settings = settings
        self.child = child
        self.config = config
        self.session: Any = None
        self.merged_lines: list[str] = []  # the xdist controller's summary of what its workers ran

    def get(self) -> Any:
        if self.session is None:
            from trainperf import device as devices
            from trainperf.session import PerfSession

            try:
                chosen = devices.choose_device(self.settings.device)
            except RuntimeError as error:
                raise pytest.UsageError(str(error)) from None
            self.session = PerfSession(self.settings, chosen, devices.fingerprint(chosen), child=self.child)
            self.session.progress = self._progress
            if _profile_flag["twin_only"]:
                self.session.note("--profile belongs to another plugin here: use --perf-profile for trainperf")
            if self.settings.profile != "off" and self.child is None:
                self._set_up_profiling(chosen)
        return self.session

    def _progress(self, text: str) -> None:
        """One ``trainperf: ...`` line on the terminal now, even while the test's output is captured."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.ensure_newline()
            reporter.write_line(f"trainperf: {text}")

    def _set_up_profiling(self, device: Any) -> None:
        """The session's profiler backend, the profiles' folder and what the child's pytest needs."""
        import torch

        from trainperf.profile.profiler import ProfileSetup, choose_backend

        session, settings, config = self.session, self.settings, self.config
        backend = choose_backend(settings.profile, device.type, os.environ, torch.__version__, session.note)
        report = config.rootpath / ".trainperf" if settings.report is None else Path(settings.report).resolve()
        args = ["--rootdir", str(config.rootpath), f"--perf-device={device.type}"]
        if config.inipath is not None:
            args += ["-c", str(config.inipath)]
        root = report / "profiles"
        session.profiling = ProfileSetup(backend, root, config.rootpath, tuple(args), settings.profile_timeout)
        session.note(f"profiles written under {root}")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Load this device's baselines once, before any case runs: an unusable file stops the run here."""
    if not any("trainperf" in getattr(item, "fixturenames", ()) for item in items):
        return
    perf = config.stash[SESSION_KEY].get()
    try:
        perf.load_baselines()
    except BaselineError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.fixture
def trainperf(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> Any:
    """Runs training cases: ``trainperf.run(workload, optimization)``."""
    from trainperf.fixture import TrainPerf

    marker = request.node.get_closest_marker(MARKER)
    marked = dict(marker.kwargs) if marker else {}
    try:
        iters = _marker_value("iters", marked)
        warmup = _marker_value("warmup", marked)
    except SettingError as error:
        raise pytest.UsageError(f"{request.node.nodeid}: {error}") from None
    return TrainPerf(request.config.stash[SESSION_KEY].get(), request.node.nodeid, iters, warmup, record_property)


def _marker_value(name: str, marked: dict[str, Any]) -> Any:
    resolved: Resolved = resolve(OPTIONS[name], marker=marked.get(name))
    return resolved.value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With pytest-html, a profiled case's row gets its Top-5 table and roofline chart."""
    outcome = yield
    report = outcome.get_result()
    lazy = item.config.stash.get(SESSION_KEY, None)
    if report.when != "call" or lazy is None or lazy.session is None or not item.config.pluginmanager.hasplugin("html"):
        return
    results = [r for r in lazy.session.results if r.nodeid == item.nodeid]
    if results:
        from trainperf.report.html_extras import extras_for

        report.extras = [*getattr(report, "extras", []), *extras_for(results[-1])]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    lazy = session.config.stash.get(SESSION_KEY, None)
    if lazy is None:
        return
    if lazy.session is None:
        if _is_xdist_controller(session.config) and lazy.settings.report is not None:
            lazy.merged_lines = _merge_workers(Path(lazy.settings.report))
        return
    perf = lazy.session
    perf.write_baselines()
    if perf.changes and perf.settings.report is not None:
        from trainperf.report.baseline_changes import write_changes

        path = write_changes(perf.changes, perf.baseline_file, perf.fingerprint.name, perf.settings.report)
        perf.note(f"baseline changes written to {path}")
    if perf.settings.report is not None and perf.results:
        from trainperf.report.rundoc import write_run_document

        path = write_run_document(perf, perf.settings.report, workers.run_file(os.environ))
        perf.note(f"run document written to {path}")
        if workers.worker_id(os.environ) is None:
            perf.note(_write_report(path))


def _merge_workers(report: Path) -> list[str]:
    """The controller of xdist workers: their run documents merged into run.json, and the report."""
    import json

    from trainperf.report.document import cases_frame, load, merge
    from trainperf.report.experiment import display_cases

    found = workers.worker_files(report)
    if not found:
        return []
    merged = merge([load(path) for path in found])
    path = report / workers.RUN_FILE
    path.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    names = ", ".join(p.name for p in found)
    table = display_cases(cases_frame(merged["benchmarks"])).to_string(index=False).splitlines()
    notes = [f"run documents of {len(found)} workers ({names}) merged into {path}", _write_report(path)]
    return table + ["note: " + note for note in [*merged["notes"], *notes]]


def _write_report(run_document: Path) -> str:
    """report.html and report.md beside the run document; says where, or why not (the run stands)."""
    from trainperf.report.document import load
    from trainperf.report.experiment import build_report
    from trainperf.report.pages import write_html, write_markdown

    try:
        report = build_report([load(run_document)])
        html = write_html(report, run_document.parent)
        write_markdown(report, run_document.parent)
    except Exception as error:  # the run's results are written already: the report only adds a view of them
        return f"report not written: {type(error).__name__}: {error}"
    return f"report written to {html} (and report.md); re-render with: trainperf report {run_document} -o DIR"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lazy = config.stash.get(SESSION_KEY, None)
    if lazy is not None and lazy.merged_lines:
        terminalreporter.write_sep("=", "trainperf: the xdist workers' cases")
        for line in lazy.merged_lines:
            terminalreporter.write_line(line)
    if lazy is None or lazy.session is None:
        return
    from trainperf.report.terminal import write_summary

    write_summary(lazy.session, terminalreporter)
