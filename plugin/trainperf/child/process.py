"""A child process that re-runs test nodes (``python -m pytest <nodeid>...``, started without a shell): its
command line, and its run with its output logged and its time limited. Every child starts here: a case
measured afresh and the profilers' children alike; no torch, pytest or pandas.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from trainperf.child.process_group import run_in_own_group

PERMISSION_HINT = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or load the driver "
    "with NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


class ChildError(RuntimeError):
    """A child process that yielded nothing of what it was started for; the message is the one-line note
    for the report, naming where its log is."""


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
    standard output alone in ``output`` when given); its exit status. ChildError on a timeout (every
    process it started stopped), ncu's permission error, or (with ``check``) a status other than 0."""
    env = None if extra_env is None else {**os.environ, **extra_env}
    tool = Path(argv[0]).name
    with contextlib.ExitStack() as stack:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(log.open("w", encoding="utf-8"))
            stdout = stack.enter_context(output.open("w")) if output is not None else handle
        except OSError as error:
            raise ChildError(f"{tool}: its log cannot be written: {type(error).__name__}: {error}") from None
        try:
            status = run_in_own_group(argv, timeout_s, cwd=cwd, env=env, stdout=stdout, stderr=handle)
        except subprocess.TimeoutExpired:
            raise ChildError(f"{tool} timed out after {timeout_s:g} s (log: {log})") from None
        except OSError as error:
            raise ChildError(f"{tool} could not start: {error}") from None
    text = log.read_text(encoding="utf-8", errors="replace")
    if "ERR_NVGPUCTRPERM" in text:
        raise ChildError(PERMISSION_HINT)
    if check and status != 0:
        raise ChildError(f"{tool} exited with status {status}: {last_line(text)} (log: {log})")
    return status


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"
