"""Several GPUs on one runner: pytest-xdist workers, one GPU each (``--perf-gpu-per-worker``).

Worker ``gwK`` sees only the K-th GPU (``CUDA_VISIBLE_DEVICES``, set before CUDA starts), so each case
is timed alone on its GPU and its baseline is that device's. It also runs on the K-th of N equal shares of
the host's physical cores (a core's hardware threads stay together), so that one worker's DataLoader
processes, compile threads and profiler children do not take the CPU time another worker's case is
timed on. Each worker writes ``run-gwK.json``; the controller
merges them into ``run.json`` and the report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

RUN_FILE = "run.json"
WORKER_FILES = "run-gw*.json"


def worker_id(environ: Mapping[str, str]) -> str | None:
    """``gw0``, ``gw1``... in a pytest-xdist worker, else None."""
    return environ.get("PYTEST_XDIST_WORKER")


def run_file(environ: Mapping[str, str]) -> str:
    worker = worker_id(environ)
    return RUN_FILE if worker is None else f"run-{worker}.json"


def gpu_of_worker(worker: str, environ: Mapping[str, str], gpu_count: int) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value of ``worker``: the K-th of the GPUs visible to the run."""
    visible = [d.strip() for d in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not environ.get("CUDA_VISIBLE_DEVICES"):
        visible = [str(index) for index in range(gpu_count)]
    index = int(worker.removeprefix("gw"))
    if index >= len(visible):
        raise ValueError(
            f"--perf-gpu-per-worker: worker {worker} has no GPU of its own ({len(visible)} visible): "
            f"run at most -n {len(visible)}"
        )
    return visible[index]


def cores_of_worker(worker: str, worker_count: int, physical: Iterable[Iterable[int]]) -> list[int]:
    """The K-th of ``worker_count`` equal, contiguous shares of the physical cores (each given as its
    hardware threads), so that no two workers share a core's threads; a remainder stays unused, and
    every thread is shared when there are fewer physical cores than workers."""
    ordered = sorted(sorted(threads) for threads in physical)
    share = len(ordered) // max(1, worker_count)
    if share == 0:
        return sorted(thread for threads in ordered for thread in threads)
    index = int(worker.removeprefix("gw"))
    return sorted(thread for threads in ordered[index * share : (index + 1) * share] for thread in threads)


def physical_cores(threads: Iterable[int], cpu_root: Path = Path("/sys/devices/system/cpu")) -> list[list[int]]:
    """``threads`` grouped by the physical core they run on (Linux's ``thread_siblings_list``); a thread
    whose topology cannot be read is a core of its own."""
    available = set(threads)
    groups: dict[tuple[int, ...], list[int]] = {}
    for thread in sorted(available):
        try:
            text = (cpu_root / f"cpu{thread}" / "topology" / "thread_siblings_list").read_text()
            siblings = tuple(sorted(set(_cpu_list(text)) & available)) or (thread,)
        except (OSError, ValueError):
            siblings = (thread,)
        groups.setdefault(siblings, list(siblings))
    return list(groups.values())


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


def pin_to_share(worker: str, worker_count: int) -> list[int] | None:
    """Run this process, the processes it starts and torch's intra-op threads on the worker's share of
    the cores it may use now; returns that share (None where the OS has no CPU affinity)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = cores_of_worker(worker, worker_count, physical_cores(os.sched_getaffinity(0)))
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
