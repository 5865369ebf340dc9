"""One child process that re-runs a test node (``python -m pytest <nodeid>``, started without a shell): what
it runs and where it writes (``Job``), its command line, and running it with its output logged. Both
``--profile`` and the fresh-process measurements start their children here; no torch, pytest or pandas.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    """One child's run: the test node it re-runs, where it runs and writes, and how long it may take."""

    nodeid: str
    rootdir: Path
    out_dir: Path
    timeout_s: float
    data_wait: float | None = None  # reader_cost / batch_cost of the timed run
    pytest_args: tuple[str, ...] = ()  # for the child's pytest: ini file, device
    timed_ms: float | None = None  # the timed run's median iteration
    trace: Path | None = None  # the trace the test process's counted iterations left, where they left one


def child_argv(job: Job, torch_trace: bool = False) -> list[str]:
    """``python -m pytest <nodeid>`` in child mode: warm up, then one marked iteration. Without the
    plugins a child has no use for: unraisableexception's exit collects the garbage up to five times."""
    argv = [sys.executable, "-m", "pytest", job.nodeid, "-q", "--no-header", "-p", "no:cacheprovider"]
    argv += ["-p", "no:xdist", "-p", "no:logging", "-p", "no:unraisableexception", *job.pytest_args]
    argv += ["--trainperf-child", str(job.out_dir)]
    return argv + (["--trainperf-child-torch"] if torch_trace else [])


def run_logged(
    argv: Sequence[str],
    job: Job,
    log_name: str,
    output_name: str | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """Run ``argv`` from the rootdir (``extra_env`` added to its environment), its output in
    ``out_dir/log_name`` (its standard output alone in ``out_dir/output_name`` when given); ProfileError
    on failure, timeout (every process it started stopped) or ncu's permission error."""
    env = None if extra_env is None else {**os.environ, **extra_env}
    job.out_dir.mkdir(parents=True, exist_ok=True)
    log = job.out_dir / log_name
    tool = Path(argv[0]).name
    with log.open("w", encoding="utf-8") as handle, contextlib.ExitStack() as stack:
        stdout = stack.enter_context((job.out_dir / output_name).open("w")) if output_name else handle
        try:
            status = run_in_own_group(argv, job.timeout_s, cwd=job.rootdir, env=env, stdout=stdout, stderr=handle)
        except subprocess.TimeoutExpired:
            raise ProfileError(f"{tool} timed out after {job.timeout_s:g} s (log: {log})") from None
        except OSError as error:
            raise ProfileError(f"{tool} could not start: {error}") from None
    text = log.read_text(encoding="utf-8", errors="replace")
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfileError(PERMISSION_HINT)
    if status != 0:
        raise ProfileError(f"{tool} exited with status {status}: {last_line(text)} (log: {log})")


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def require_child_ran(job: Job) -> None:
    if not (job.out_dir / CHILD_INFO).is_file():
        raise ProfileError(f"the child process ran no marked iteration of {job.nodeid} (log in {job.out_dir})")
