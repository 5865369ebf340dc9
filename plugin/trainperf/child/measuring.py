"""A case measured afresh in a process of its own: what recording baselines and confirming a failure need.

Runs of one case in one process share that process's state (its memory layout, its threads, what ran
before): runs of a launch-bound case in one process agree far more closely than runs in fresh
processes (research/evidence/h100-trust.md), so one process would understate the noise. A child
process re-runs the test node in measuring mode (``python -m pytest <nodeid>``, no shell), with the
parent's iterations, and writes the measurement as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trainperf.child.process import ChildError, child_argv, run_logged
from trainperf.child.protocol import MEASUREMENT
from trainperf.measure.measurement import Measurement

# the child's own start (the interpreter, torch, pytest's collection) beyond the case's time limit, which
# the child keeps itself: the parent stops a child that outlives both, as one hung where no signal reaches
START_S = 120.0


@dataclass(frozen=True)
class Children:
    """How a child process re-runs a test node as the session would."""

    rootdir: Path
    pytest_args: tuple[str, ...]  # rootdir, ini file, device


def measure(children: Children, nodeid: str, what: str, warmup: int, iters: int, limit_s: float) -> Measurement:
    """``what`` ("case" or "reference") of the node's case, measured in a fresh process within the case's
    time limit (``limit_s``, as in the test process); ChildError says why there is no measurement."""
    folder = Path(tempfile.mkdtemp(prefix="trainperf-run-"))  # kept, with the child's log, when it fails
    args = (*children.pytest_args, f"--perf-warmup={warmup}", f"--perf-iters={iters}", f"--perf-timeout={limit_s:g}")
    # pytest, then an exit without the interpreter's teardown: it has written its measurement by then
    argv = child_argv([nodeid], args, folder, main="trainperf.child.entry")
    argv += ["--trainperf-child-measure", what]
    try:
        run_logged(argv, folder / "child.log", children.rootdir, limit_s + START_S)
    except ChildError as error:
        raise ChildError(f"{what} measured in a fresh process: {error}") from None
    written = folder / MEASUREMENT
    if not written.is_file():
        raise ChildError(f"{what} measured in a fresh process: no {MEASUREMENT} (log: {folder / 'child.log'})")
    measured = Measurement(**json.loads(written.read_text(encoding="utf-8")))
    shutil.rmtree(folder, ignore_errors=True)
    return measured


def write(measurement: Measurement, folder: Path) -> None:
    """The child's side: the measurement as JSON in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MEASUREMENT).write_text(json.dumps(dataclasses.asdict(measurement)), encoding="utf-8")
