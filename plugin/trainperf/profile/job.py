"""A child process that re-runs test nodes (``python -m pytest <nodeid>...``, started without a shell): what
it runs for each case and where it writes (``Job``), its command line, and running it with its output
logged. Both ``--profile`` and the fresh-process measurements start their children here; no torch, pytest
or pandas.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainperf.profile.child import CHILD_INFO
from trainperf.profile.process_group import run_in_own_group

PERMISSION_HINT = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or load the driver "
    "with NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


class ProfileError(RuntimeError):
    """A profiler run that yielded no profile; the message is the one-line note for the report."""


@dataclass(frozen=True)
class Job:
    """One case's part of a child's run: the test node it re-runs, where it runs and writes (the case's
    folder), and how long it may take."""

    nodeid: str
    rootdir: Path
    out_dir: Path
    timeout_s: float
    data_wait: float | None = None  # reader_cost / batch_cost of the timed run
    pytest_args: tuple[str, ...] = ()  # for the child's pytest: ini file, device
    timed_ms: float | None = None  # the timed run's median iteration
    trace: Path | None = None  # the trace the test process's counted iterations left, where they left one


@dataclass(frozen=True)
class Batch:
    """The jobs one child process runs, in order: its logs and reports go in ``out_dir``, the folder above
    the cases' own (a case's own folder where the batch is that case alone)."""

    jobs: tuple[Job, ...]

    @property
    def out_dir(self) -> Path:
        return self.jobs[0].out_dir if len(self.jobs) == 1 else self.jobs[0].out_dir.parent

    @property
    def timeout_s(self) -> float:
        return sum(job.timeout_s for job in self.jobs)

    def argv(self, torch_trace: bool = False) -> list[str]:
        """The child that profiles a marked iteration of each job's case (each test node named once)."""
        nodeids = list(dict.fromkeys(job.nodeid for job in self.jobs))
        argv = child_argv(nodeids, ["--capture=no", *self.jobs[0].pytest_args], self.jobs[0].out_dir.parent)
        return argv + (["--trainperf-child-torch"] if torch_trace else [])  # uncaptured: its log names each case

    def forget_earlier(self, *reports: Path) -> None:
        """Remove what an earlier child left (each case's mark that it ran, the reports given), so that
        none stands in for what this child did not write."""
        for path in [*(job.out_dir / CHILD_INFO for job in self.jobs), *reports]:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                path.unlink()

    def run(self, argv: Sequence[str], log_name: str, output_name: str | None = None, **kwargs: Any) -> int:
        """``run_logged`` from the jobs' rootdir, in ``out_dir``, within the jobs' time limits together."""
        out = self.out_dir
        output = None if output_name is None else out / output_name
        return run_logged(argv, out / log_name, self.jobs[0].rootdir, self.timeout_s, output, **kwargs)


def child_argv(nodeids: Sequence[str], pytest_args: Sequence[str], out_dir: Path, main: str = "pytest") -> list[str]:
    """``python -m pytest <nodeid>...`` (or another ``main`` module that runs pytest) in child mode, writing
    under ``out_dir``. Without the plugins a child has no use for: unraisableexception's exit collects the
    garbage up to five times."""
    argv = [sys.executable, "-m", main, *nodeids, "-q", "--no-header", "-p", "no:cacheprovider"]
    argv += ["-p", "no:xdist", "-p", "no:logging", "-p", "no:unraisableexception", *pytest_args]
    return [*argv, "--trainperf-child", str(out_dir)]


def run_logged(
    argv: Sequence[str],
    log: Path,
    cwd: Path,
    timeout_s: float,
    output: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    check: bool = True,
) -> int:
    """Run ``argv`` from ``cwd`` (``extra_env`` added to its environment), its output in ``log`` (its
    standard output alone in ``output`` when given); its exit status. ProfileError on a timeout (every
    process it started stopped), ncu's permission error, or (with ``check``) a status other than 0."""
    env = None if extra_env is None else {**os.environ, **extra_env}
    tool = Path(argv[0]).name
    with contextlib.ExitStack() as stack:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(log.open("w", encoding="utf-8"))
            stdout = stack.enter_context(output.open("w")) if output is not None else handle
        except OSError as error:
            raise ProfileError(f"{tool}: its log cannot be written: {type(error).__name__}: {error}") from None
        try:
            status = run_in_own_group(argv, timeout_s, cwd=cwd, env=env, stdout=stdout, stderr=handle)
        except subprocess.TimeoutExpired:
            raise ProfileError(f"{tool} timed out after {timeout_s:g} s (log: {log})") from None
        except OSError as error:
            raise ProfileError(f"{tool} could not start: {error}") from None
    text = log.read_text(encoding="utf-8", errors="replace")
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfileError(PERMISSION_HINT)
    if check and status != 0:
        raise ProfileError(f"{tool} exited with status {status}: {last_line(text)} (log: {log})")
    return status


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def require_child_ran(job: Job, log: Path | None = None) -> None:
    if not (job.out_dir / CHILD_INFO).is_file():
        where = f"log: {log}" if log is not None else f"log in {job.out_dir}"
        raise ProfileError(f"the child process ran no marked iteration of {job.nodeid} ({where})")


def own_seconds(job: Job, since: float) -> float:
    """The seconds the child spent on this job's case alone (its ``CHILD_INFO``), where a child wrote it at
    or after ``since`` (wall clock); 0 where none did (a case profiled from the test process's trace)."""
    info = job.out_dir / CHILD_INFO
    try:
        if info.stat().st_mtime < since:
            return 0.0
        seconds = json.loads(info.read_text(encoding="utf-8")).get("seconds", 0.0)
    except (OSError, ValueError, AttributeError):
        return 0.0
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else 0.0
