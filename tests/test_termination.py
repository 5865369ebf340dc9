"""A session stopped from outside: SIGTERM ends it as Ctrl-C does, what it measured is kept, and no
child process it started runs on."""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from trainperf.child.process_group import run_in_own_group
from trainperf.hooks.termination import SigtermAsInterrupt

from tests.test_plugin import BASE, two_cases

posix_only = pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals only")


@pytest.fixture
def default_sigterm() -> Iterator[None]:
    """SIGTERM at Python's default for the test (this very session may handle it), then as it was."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raising KeyboardInterrupt for the test, as in a terminal, then as it was: a session started
    in the background (``&`` in a script, nohup) inherits SIGINT ignored, and ``interrupt_main`` then
    does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@posix_only
def test_sigterm_becomes_an_interrupt_once_and_its_copy_is_ignored(default_sigterm: None) -> None:
    handler = SigtermAsInterrupt()
    handler.install()
    assert handler.installed  # else the signal below would end this test session
    with pytest.raises(KeyboardInterrupt, match="SIGTERM received"):
        signal.raise_signal(signal.SIGTERM)
    assert handler.received
    signal.raise_signal(signal.SIGTERM)  # the same stop again (a process group and a forwarding wrapper)
    handler.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@posix_only
def test_a_later_second_sigterm_ends_the_process_as_the_default_would() -> None:
    script = (
        "import signal, time\n"
        "from trainperf.hooks.termination import SigtermAsInterrupt\n"
        "handler = SigtermAsInterrupt(duplicate_s=0.1)\n"
        "handler.install()\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGTERM)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "time.sleep(0.3)\n"
        "signal.raise_signal(signal.SIGTERM)\n"
        "print('still running')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert done.stdout.split() == ["interrupted"]


@posix_only
def test_another_handler_of_sigterm_stays_in_charge(default_sigterm: None) -> None:
    def runner_s_own(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGTERM, runner_s_own)
    handler = SigtermAsInterrupt()
    handler.install()
    handler.uninstall()
    assert not handler.installed and signal.getsignal(signal.SIGTERM) is runner_s_own


@posix_only
def test_the_handler_is_put_back_at_the_end(default_sigterm: None) -> None:
    handler = SigtermAsInterrupt()
    handler.install()
    handler.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@posix_only
def test_an_interrupted_wait_kills_the_child_in_its_own_group(tmp_path: Path, ctrl_c_raises: None) -> None:
    """A child in a group of its own gets no Ctrl-C from the terminal: the wait takes it down with it."""
    pid_file = tmp_path / "pid"
    argv = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"]
    interrupt = threading.Timer(0.5, _thread.interrupt_main)
    interrupt.start()
    with pytest.raises(KeyboardInterrupt):
        run_in_own_group(argv, timeout_s=60)
    interrupt.join()
    child = int(pid_file.read_text())
    assert _came_true(lambda: not _running(child), 30), f"the child {child} runs on after the interrupted wait"


# a session that starts a child in a group of its own and waits for it
SESSION = """import sys
from trainperf.child.process_group import run_in_own_group
pid_file = sys.argv[1]
run_in_own_group(["sh", "-c", f"echo $$ > {pid_file}.new && mv {pid_file}.new {pid_file}; exec sleep 60"], 60)
"""


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux tells a process its parent died")
def test_a_session_killed_outright_takes_its_child_with_it(tmp_path: Path) -> None:
    """SIGKILL gives the session no chance to stop its child; the group's leader does (lease BN)."""
    pid_file = tmp_path / "pid"
    session = subprocess.Popen([sys.executable, "-c", SESSION, str(pid_file)])
    try:
        assert _came_true(pid_file.exists, 60), "the child never started"
        child = int(pid_file.read_text())
    finally:
        session.kill()
        session.wait()
    assert _came_true(lambda: not _running(child), 30), f"the child {child} runs on after its session was killed"


def test_a_command_that_does_not_exist_fails_as_popen_would() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-profiler"):
        run_in_own_group(["no-such-profiler", "--version"], timeout_s=60)


def _came_true(condition: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit may wait for a reaper)."""
    if not Path("/proc").is_dir():  # no process table to read: a zombie counts as running
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


# how `timeout` stops a script that forwards SIGTERM to the pytest it started: pytest gets it twice
FORWARDING_WRAPPER = 'trap \'kill -TERM "$child"; wait "$child"; exit $?\' TERM; "$@" & child=$!; wait "$child"'
STOPS = {
    "to pytest": "os.kill(os.getpid(), signal.SIGTERM)",
    "to its group, and forwarded by a wrapper": "os.killpg(os.getpgid(0), signal.SIGTERM)",
}


def stopped_after_the_variant(pytester: pytest.Pytester, stop: str) -> None:
    """Two recorded cases made slower: toy/reference looks slower and waits for the end of the session,
    and the statement ``stop`` runs once toy/variant has been measured and judged."""
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, "--update-baselines", "--perf-runs=1").assert_outcomes(
        passed=2
    )  # a baseline to slow against
    two_cases(pytester, '{"sleep_ms": 40.0}')
    pytester.makeconftest(
        "import os, signal\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' and 'variant' in report.nodeid:\n"
        f"        {stop}\n"
    )


@posix_only
@pytest.mark.slow
@pytest.mark.parametrize("stop", STOPS)
def test_a_session_ended_by_sigterm_writes_its_reports(pytester: pytest.Pytester, stop: str) -> None:
    """The case that finished is in run.json and JUnit; the one waiting for its second measurement is named."""
    stopped_after_the_variant(pytester, STOPS[stop])
    args = [sys.executable, "-m", "pytest", *BASE, "--perf-report=out", "--junitxml=j.xml"]
    args = ["bash", "-c", FORWARDING_WRAPPER, "wrapper", *args]  # its own group: only the wrapper and pytest
    done = subprocess.run(args, cwd=pytester.path, capture_output=True, text=True, timeout=600, start_new_session=True)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout + done.stderr
    assert "note: stopped by SIGTERM (a time limit or the runner): the cases that finished are reported" in done.stdout
    assert "not judged: the session ended before their second measurement: test_toy.py::test_toy[reference]" in (
        done.stdout
    )
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert [case["name"] for case in document["benchmarks"]] == ["toy/variant"]
    assert [(case["name"], case["verdict"]) for case in document["unfinished"]] == [("toy/reference", "not judged")]
    assert 'name="test_toy[variant]"' in (pytester.path / "j.xml").read_text()


@posix_only
@pytest.mark.slow
def test_sigterm_during_the_second_measurement_ends_the_session_quietly(pytester: pytest.Pytester) -> None:
    """Stopped while a held case is measured again at the end: the case is named unjudged, with no
    warning from pytest's hook machinery about a hook that raised."""
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, "--update-baselines", "--perf-runs=1").assert_outcomes(
        passed=2
    )  # a baseline to slow against
    two_cases(pytester, '{"sleep_ms": 40.0}')
    pytester.makeconftest(
        "import os, signal\n"
        "starts = []\n"
        "def pytest_runtest_logstart(nodeid):\n"
        "    starts.append(nodeid)\n"
        "    if starts.count(nodeid) == 2:  # the held case's run at the end of the session\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
    )
    args = [sys.executable, "-m", "pytest", *BASE, "--perf-report=out"]
    done = subprocess.run(args, cwd=pytester.path, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "PluggyTeardownRaisedWarning" not in output
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert [(case["name"], case["verdict"]) for case in document["unfinished"]] == [("toy/reference", "not judged")]


@posix_only
@pytest.mark.slow
def test_a_session_killed_outright_keeps_the_cases_it_finished(pytester: pytest.Pytester) -> None:
    """SIGKILL leaves no time to write reports: run.json, written after each case, holds the case that
    finished and the one waiting for its second measurement, and says the session did not end."""
    stopped_after_the_variant(pytester, "os.kill(os.getpid(), signal.SIGKILL)")
    args = [sys.executable, "-m", "pytest", *BASE, "--perf-report=out"]
    done = subprocess.run(args, cwd=pytester.path, capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert document["finished"] is False
    assert [case["name"] for case in document["benchmarks"]] == ["toy/variant"]
    unjudged = [(case["name"], case["verdict"]) for case in document["unfinished"]]
    assert unjudged == [("toy/reference", "not judged")]
    assert document["unfinished"][0]["reason"].startswith("first measurement: toy/reference: slower than baseline")
    assert not list((pytester.path / "out").glob("*.partial"))


@pytest.mark.slow
def test_a_session_that_ends_rewrites_its_run_document_whole(pytester: pytest.Pytester) -> None:
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, "--update-baselines", "--perf-runs=1", "--perf-report=out").assert_outcomes(passed=2)
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert document["finished"] is True and document["unfinished"] == []
    assert [case["name"] for case in document["benchmarks"]] == ["toy/reference", "toy/variant"]
    assert not any(note.startswith("written while the session ran") for note in document["notes"])
