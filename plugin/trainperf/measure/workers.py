"""Several GPUs on one runner: pytest-xdist workers, one GPU each (``--perf-gpu-per-worker``).

Each worker claims the first visible GPU that no other worker of the run holds (a lock file in a folder
the controller hands out), and sees only that GPU (``CUDA_VISIBLE_DEVICES``, set before CUDA starts), so
each case is timed alone on its GPU and its baseline is that device's. The K-th GPU's worker also runs
on the K-th of N equal shares of the host's physical cores (a core's hardware threads stay together), so
that one worker's DataLoader processes, compile threads and profiler children do not take the CPU time
another worker's case is timed on. Each worker writes ``run-gwK.json``; the controller merges them into
``run.json`` and the report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import filelock

RUN_FILE = "run.json"
WORKER_FILES = "run-gw*.json"


def worker_id(environ: Mapping[str, str]) -> str | None:
    """``gw0``, ``gw1``... in a pytest-xdist worker, else None."""
    return environ.get("PYTEST_XDIST_WORKER")


def workers_at_once(environ: Mapping[str, str], gpu_per_worker: bool) -> int:
    """How many pytest-xdist workers train cases on this process's cores and GPU at once: 1 outside xdist
    and with a GPU each (--perf-gpu-per-worker), else the run's worker count."""
    if gpu_per_worker or worker_id(environ) is None:
        return 1
    return int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def run_file(environ: Mapping[str, str]) -> str:
    worker = worker_id(environ)
    return RUN_FILE if worker is None else f"run-{worker}.json"


def visible_gpus(environ: Mapping[str, str], gpu_count: int) -> list[str]:
    """The GPUs the run may use: those ``CUDA_VISIBLE_DEVICES`` names, else every one the driver sees."""
    named = [d.strip() for d in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return named if environ.get("CUDA_VISIBLE_DEVICES") else [str(index) for index in range(gpu_count)]


def claim_gpu(visible: list[str], claims: Path) -> tuple[int, str, filelock.BaseFileLock]:
    """The first of the visible GPUs that no other worker of this run holds: its index, its
    ``CUDA_VISIBLE_DEVICES`` value and the lock that holds it until this process ends or lets it go (a
    crashed worker's GPU is free again for the worker pytest-xdist starts in its place)."""
    if not visible:
        raise ValueError(
            "--perf-gpu-per-worker: no GPU is visible (the driver reports none, or CUDA_VISIBLE_DEVICES is empty)"
        )
    for index, gpu in enumerate(visible):
        lock = filelock.FileLock(claims / f"gpu-{index}.lock", timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            continue
        return index, gpu, lock
    raise ValueError(
        f"--perf-gpu-per-worker: each of the {len(visible)} visible GPUs is held by another worker of this run: "
        f"run at most -n {len(visible)}"
    )


def cores_of_worker(index: int, worker_count: int, physical: Iterable[Iterable[int]]) -> list[int]:
    """The ``index``-th of ``worker_count`` equal, contiguous shares of the physical cores (each given as its
    hardware threads), so that no two workers share a core's threads; a remainder stays unused, and
    every thread is shared when there are fewer physical cores than workers."""
    ordered = sorted(sorted(threads) for threads in physical)
    share = len(ordered) // max(1, worker_count)
    if share == 0:
        return sorted(thread for threads in ordered for thread in threads)
    return sorted(thread for threads in ordered[index * share : (index + 1) * share] for thread in threads)


def physical_cores(threads: Iterable[int], cpu_root: Path = Path("/sys/devices/system/cpu")) -> list[list[int]]:
    """``threads`` grouped by the physical core they run on (Linux's ``thread_siblings_list``); a thread
    whose topology cannot be read is a core of its own."""
    available = set(threads)
    return [
        list(core) for core in dict.fromkeys(_siblings(thread, available, cpu_root) for thread in sorted(available))
    ]


def _siblings(thread: int, available: set[int], cpu_root: Path) -> tuple[int, ...]:
    """The available hardware threads of ``thread``'s physical core, itself alone where unknown."""
    try:
        text = (cpu_root / f"cpu{thread}" / "topology" / "thread_siblings_list").read_text()
        return tuple(sorted(set(_cpu_list(text)) & available)) or (thread,)
    except (OSError, ValueError):
        return (thread,)


def _cpu_list(text: str) -> list[int]:
    """Linux's CPU list format: ``0-3,8,10-11``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one; a GPU worker's share)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def pin_to_share(index: int, worker_count: int) -> list[int] | None:
    """Run this process, the processes it starts and torch's intra-op threads on the worker's share of
    the cores it may use now; returns that share (None where the OS has no CPU affinity)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = cores_of_worker(index, worker_count, physical_cores(os.sched_getaffinity(0)))
    os.sched_setaffinity(0, cores)
    torch = sys.modules.get("torch")  # imported already: its thread pool was sized for the whole host
    if torch is not None:
        torch.set_num_threads(len(cores))
    return cores


def nvml_gpu_count() -> int:
    """GPUs the driver sees, through NVML (which, unlike CUDA, can be asked before CUDA_VISIBLE_DEVICES is set)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def worker_files(report: Path) -> list[Path]:
    return sorted(report.glob(WORKER_FILES))
