"""A profiling child's work: what it runs for each case and where it writes (``Job``), the jobs of one
child together (``Batch``), and what each case's part of it cost; the child itself is started by
``child.process``. No torch, pytest or pandas.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainperf.child.process import ChildError, child_argv, run_logged
from trainperf.child.protocol import CHILD_INFO


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


def require_child_ran(job: Job, log: Path | None = None) -> None:
    if not (job.out_dir / CHILD_INFO).is_file():
        where = f"log: {log}" if log is not None else f"log in {job.out_dir}"
        raise ChildError(f"the child process ran no marked iteration of {job.nodeid} ({where})")


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
