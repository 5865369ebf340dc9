"""Choose the fastest of several ways to run a GEMM of one shape by timing each on the GPU at its first
call, and remember the choice for the process's later calls and for later processes on the same GPU
model, torch and CUDA (as Inductor's autotuning does for its kernels, but among cuBLAS's own algorithms).
The choices are kept beside torch.compile's cache (``TORCHINDUCTOR_CACHE_DIR``): a profiling child or the
next night runs what the first process chose without timing it again; delete the file to time again.

Timing happens outside CUDA-graph capture only: a call captured before its shape was timed runs the
first candidate. Training's warm-up iterations, which compile and capture, time every shape first, so
the tuning time falls in the first iteration's figure, not in the timed samples.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import torch

TIMED_CALLS = 5  # back-to-back calls per timing
TIMINGS = 3  # timings per candidate, the fastest kept

Name = TypeVar("Name", bound=Hashable)  # of one way to run a GEMM
_choices: dict[Hashable, Any] = {}
_timings: dict[Hashable, dict[Hashable, float]] = {}


def call_times(run: Callable[[], object], calls: int, timings: int, warmups: int = 1) -> list[float]:
    """Milliseconds per call of ``run`` in each of ``timings`` CUDA-event timings of ``calls`` calls in a
    row, after ``warmups`` calls."""
    for _ in range(warmups):
        run()
    times = []
    for _ in range(timings):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return times


def fastest(key: Hashable, names: Sequence[Name], run: Callable[[Name], object]) -> Name:
    """The fastest of the ways ``names`` (``run(name)`` runs one) to run the GEMM ``key`` describes:
    the choice kept for the key, else each way timed at the key's first call outside CUDA-graph capture
    (the fastest of ``TIMINGS`` timings of ``TIMED_CALLS`` calls) and the choice kept; during capture of
    a key not yet chosen, the first name."""
    if key in _choices:
        return cast(Name, _choices[key])
    kept = _kept_choices().get(repr(key))
    if kept in names:
        _choices[key] = kept
        return cast(Name, kept)
    if torch.cuda.is_current_stream_capturing():
        return names[0]
    torch.cuda.synchronize()
    times: dict[Hashable, float] = {}
    for name in names:
        times[name] = min(call_times(functools.partial(run, name), TIMED_CALLS, TIMINGS))
    choice = min(names, key=lambda name: times[name])
    _choices[key], _timings[key] = choice, times
    _keep(key, choice)
    return choice


def choices_file() -> Path:
    """This GPU model's choices under this torch and CUDA, kept between processes (Inductor, whose cache
    folder it is, imported here: importing it imports Dynamo, a second of CPU)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    tag = f"{torch.cuda.get_device_name()}-torch{torch.__version__}-cuda{torch.version.cuda}"
    return Path(cache_dir()) / "gemm_choices" / (re.sub(r"[^A-Za-z0-9.+]+", "-", tag) + ".json")


@functools.cache
def _kept_choices() -> dict[str, Any]:
    """The choices earlier processes kept (by the key's repr), read once a process."""
    return _read(choices_file())


def _read(path: Path) -> dict[str, Any]:
    """The choices in ``path``; a missing or unreadable file is an empty one: a cache never fails a run."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _keep(key: Hashable, choice: object) -> None:
    """Add a choice to the file, replaced whole (a concurrent writer's addition may be lost, and timed
    again later); a file that cannot be written leaves the choice to this process alone."""
    kept = _kept_choices()
    kept[repr(key)] = choice
    path = choices_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
            json.dump({**_read(path), **kept}, handle, indent=1, sort_keys=True)
        os.replace(handle.name, path)
    except (OSError, TypeError, ValueError):
        return


def choices() -> dict[Hashable, Any]:
    """Each timed key's chosen way, as ``fastest`` returns it for the rest of the process."""
    return dict(_choices)


def timings() -> dict[Hashable, dict[Hashable, float]]:
    """Each timed key's candidates and their milliseconds per call, in the order they were timed."""
    return {key: dict(times) for key, times in _timings.items()}
