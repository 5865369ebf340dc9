"""The work of an iteration, counted: the ATen ops the case dispatches (by name), the host's
synchronizations with the device, the copies between host and device, and on a GPU the kernels it
launches and their time (by kernel).

Counted under torch.profiler in a few untimed iterations after the timed ones, so the count never
touches the timed window. The same code asks the machine for the same work on any host: these figures
hold still between processes and machines where the iteration's time moves with the host, so a rise in
them is a change of the code. The profiler sees compiled code as it runs (a ``TorchDispatchMode`` would
make torch.compile fall back to eager). An op is counted where no other ATen op called it: what the
program asked for, not how each op decomposes. In a data-parallel rank, communication kernels are
counted, their time is not (kept as 0): an NCCL kernel runs until the other ranks reach it, so its
time is mostly waiting. A rank on the CPU counts nothing: profiling beside gloo's threads corrupted a
rank's heap. On a GPU the profile must not outlive itself: Kineto leaves CUPTI attached after a profile
unless ``TEARDOWN_CUPTI=1``, and an attached CUPTI slows every later kernel launch of the process, so the
next case of the session would be timed slower wherever it waits on the host (``detach_cupti``). The
counted iterations share one profile, split at the range around each: Kineto tears CUPTI down on a
thread of its own after a profile, and a profile started soon after another one loses its GPU activity
to that pending teardown (no kernels, no synchronizing calls), so one profile a count, never one an
iteration. Under ``--profile`` the same profile is written as a chrome trace with its last iteration
marked (``MARK``, its phases as ranges): the Top-5 is read from it, so no process starts to find it.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import os
import statistics
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.autograd import DeviceType  # type: ignore[attr-defined]
from torch.profiler import ProfilerActivity, profile, record_function

from trainperf.measure import device as devices
from trainperf.measure.marks import MARK
from trainperf.measure.phases import PhaseRanges

COUNTED_ITERATIONS = 3  # the median of three: one iteration that skips its optimizer step does not move it
COUNTED_RANGE = "trainperf_counted_iteration"  # the profiler range around each counted iteration
# how the work was counted, kept with it: 2, in one profile, only inside the iterations (counter 1 read one
# synchronization more an iteration: the one that ends each of its profiles)
COUNTER = 2
# ops that read a tensor's value on the host (.item(), bool(), float()): on a GPU each waits for it
HOST_READS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"})
# the CUDA runtime's calls that make the host wait for the device (cudaMemcpyAsync does not: not counted)
SYNCHRONIZING_CALLS = frozenset(
    {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
)
# the GPU activity of a copy between host and device (a copy within the device is a "Memcpy DtoD")
DEVICE_COPIES = ("Memcpy HtoD", "Memcpy DtoH")


@dataclass(frozen=True)
class Work:
    """One iteration's counted work, the median of the counted iterations (kernels: None on the CPU), with
    each figure's spread over them (``spreads``: the largest minus the smallest) and the GPU's mean SM
    clock while they ran (None where NVML cannot tell): kernel time is judged at the recorded clock."""

    ops: int
    syncs: int
    copies: int
    ops_by_name: dict[str, int] = field(default_factory=dict)
    kernels: int | None = None
    kernel_ms: float | None = None
    kernels_by_name: dict[str, list[float]] = field(default_factory=dict)  # name: [launches, ms]
    spreads: dict[str, float] = field(default_factory=dict)
    sm_clock_mhz: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ops": self.ops,
            "syncs": self.syncs,
            "copies": self.copies,
            "kernels": self.kernels,
            "kernel_ms": self.kernel_ms,
            "sm_clock_mhz": self.sm_clock_mhz,
            "counter": COUNTER,
            **{f"{key}_spread": spread for key, spread in self.spreads.items()},
            "ops_by_name": self.ops_by_name,
            "kernels_by_name": self.kernels_by_name,
        }


@dataclass
class _Iteration:
    ops: collections.Counter[str] = field(default_factory=collections.Counter)
    syncs: int = 0
    copies: int = 0
    kernels: collections.Counter[str] = field(default_factory=collections.Counter)
    kernel_us: collections.Counter[str] = field(default_factory=collections.Counter)


def count(
    step: Callable[[Any], object],
    fetch: Callable[[], tuple[Any, float]],
    device: torch.device,
    iterations: int = COUNTED_ITERATIONS,
    trace: tuple[Path, PhaseRanges] | None = None,
) -> Work:
    """The work of ``iterations`` training iterations (``step(fetch()[0])``, the fetch included, as in a
    timed iteration), each figure the median over them. With ``trace`` (a path and the case's phase
    ranges), the last one is also the marked iteration and the profile is written to the path; a trace
    that cannot be written is left out (the profiler's child finds the Top-5 then)."""
    cuda = device.type == "cuda"
    if cuda:
        detach_cupti()
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    phases = None if trace is None else trace[1]
    with devices.ClockWatch(device) as watch, warnings.catch_warnings(), profile(activities=activities) as profiler:
        warnings.filterwarnings("ignore", message=".*Profiler clears events")  # one profile: nothing to keep
        for index in range(iterations):
            marked = phases is not None and index == iterations - 1
            with record_function(COUNTED_RANGE), _marked(phases if marked else None):
                step(fetch()[0])
                if cuda:
                    torch.cuda.synchronize(device)
    counted = [_read(events, cuda) for events in by_iteration(profiler.events())]
    for iteration in counted:
        iteration.syncs -= cuda  # not the synchronization that ends the counted iteration
    if trace is not None:
        _write_trace(profiler, trace[0])
    clocks = watch.summary() or {}
    return _median(counted, cuda, clocks.get("mean_sm_clock_mhz"))


@contextlib.contextmanager
def _marked(phases: PhaseRanges | None) -> Iterator[None]:
    """The iteration inside the ``MARK`` range, its phases as torch.profiler ranges (``phases``); else as is.
    Ranges are no work: a count skips them."""
    if phases is None:
        yield
        return
    phases.for_torch_profiler = True
    try:
        with phases(MARK):
            yield
    finally:
        phases.for_torch_profiler = False


def _write_trace(profiler: profile, path: Path) -> None:
    """The profile as a chrome trace at ``path``, over an earlier run's; where it cannot be written, none
    (an earlier or partial one removed): a trace is only ever this run's."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        profiler.export_chrome_trace(str(path))
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def by_iteration(events: Iterable[Any]) -> list[list[Any]]:
    """A profile's events split by counted iteration: each to the iteration whose range it started in. A
    kernel starts inside the iteration that launched it, which ends by waiting for the device; what the
    profiler does outside the ranges (the synchronization that ends its profile) is no iteration's."""
    events = list(events)
    ranges = sorted(
        (e.time_range.start, e.time_range.end)
        for e in events
        if e.name == COUNTED_RANGE and e.device_type == DeviceType.CPU
    )
    opened = [start for start, _ in ranges]
    split: list[list[Any]] = [[] for _ in ranges]
    for event in events:
        index = bisect.bisect_right(opened, event.time_range.start) - 1
        if event.name != COUNTED_RANGE and index >= 0 and event.time_range.start <= ranges[index][1]:
            split[index].append(event)
    return split


def detach_cupti() -> None:
    """Have Kineto detach CUPTI when each profile of this process ends (``TEARDOWN_CUPTI=1``), unless the
    user or torch chose otherwise: torch turns it off itself where CUDA graphs cannot survive it (CUDA
    before 12.6). Left set for the process: Kineto reads it again when it detaches, after the profile."""
    os.environ.setdefault("TEARDOWN_CUPTI", "1")


def _read(events: Iterable[Any], cuda: bool) -> _Iteration:
    """One profiled iteration's ops (those no other ATen op called), host reads and copies, and on a GPU
    its kernels, their time and the runtime's synchronizing calls."""
    found = _Iteration()
    for event in events:
        name = event.name
        if getattr(event, "is_user_annotation", False):  # a range such as Optimizer.step: its span, not work
            continue
        if event.device_type == DeviceType.CUDA and name.startswith("Memcpy"):
            found.copies += name.startswith(DEVICE_COPIES)
        elif event.device_type == DeviceType.CUDA:
            found.kernels[name] += 1
            found.kernel_us[name] += 0 if is_communication(name) else event.device_time
        elif name.startswith("aten::") and not _called_by_an_op(event):
            found.ops[name] += 1
            found.syncs += name in HOST_READS and not cuda
        elif cuda and name in SYNCHRONIZING_CALLS:
            found.syncs += 1
    return found


def is_communication(kernel: str) -> bool:
    """NCCL's kernels (``ncclDevKernel_AllReduce_...``): a rank's part of a collective operation."""
    return "nccl" in kernel.lower()


def _called_by_an_op(event: Any) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


def _median(counted: list[_Iteration], cuda: bool, sm_clock_mhz: float | None = None) -> Work:
    figures: dict[str, list[float]] = {
        "ops": [sum(it.ops.values()) for it in counted],
        "syncs": [it.syncs for it in counted],
        "copies": [it.copies for it in counted],
    }
    if cuda:
        figures["kernels"] = [sum(it.kernels.values()) for it in counted]
        figures["kernel_ms"] = [sum(it.kernel_us.values()) / 1000 for it in counted]
    medians = {key: float(statistics.median(values)) for key, values in figures.items()}
    kernels = _by_name([iteration.kernels for iteration in counted])
    kernel_ms = {name: statistics.median(it.kernel_us[name] for it in counted) / 1000 for name in kernels}
    return Work(
        ops=int(medians["ops"]),
        syncs=int(medians["syncs"]),
        copies=int(medians["copies"]),
        ops_by_name=_by_name([iteration.ops for iteration in counted]),
        kernels=int(medians["kernels"]) if cuda else None,
        kernel_ms=round(medians["kernel_ms"], 4) if cuda else None,
        kernels_by_name={name: [n, round(kernel_ms[name], 4)] for name, n in kernels.items()},
        spreads={key: round(max(values) - min(values), 4) for key, values in figures.items()},
        sm_clock_mhz=sm_clock_mhz,
    )


def _by_name(counters: list[collections.Counter[str]]) -> dict[str, int]:
    """Each name's median count over the iterations, where it is not zero."""
    names = sorted({name for counter in counters for name in counter})
    medians = {name: int(statistics.median(counter[name] for counter in counters)) for name in names}
    return {name: n for name, n in medians.items() if n}
