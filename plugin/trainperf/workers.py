"""Several GPUs on one runner: pytest-xdist workers, one GPU each (``--perf-gpu-per-worker``).

Worker ``gwK`` sees only the K-th GPU (``CUDA_VISIBLE_DEVICES``, set before CUDA starts), so each case
is timed alone on its GPU and its baseline is that device's. Each worker writes ``run-gwK.json``; the
controller merges them into ``run.json`` and the report.
"""

from __future__ import annotations

from collections.abc import Mapping
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
