"""Data-parallel cases: one process per GPU with PyTorch's DistributedDataParallel over NCCL, or two
gloo processes on the CPU. Every process loads the same batches and trains its own slice of each, so a
case trains what the single-process case of the same global batch trains. Rank 0 reports; every rank's
failure reaches the test's message; no rank outlives the case.

Started by a launcher (torchrun, ``srun torchrun``: ``trainperf.measure.launcher``), each pytest process is one
rank: the cases train in the launcher's group, which may span hosts, instead of spawning processes. A
rank that dies leaves the others waiting inside a collective operation, where no Python signal reaches
them: the group's collectives time out at the case's time limit, and NCCL's communicators are then
aborted without ending the process (``TORCH_NCCL_ASYNC_ERROR_HANDLING=2``; torchrun's own default, 1,
ends it, often before the run document is written), so that the rank fails its case with one line and
the session ends with its run document written, leaving the broken group without a last collective."""

from __future__ import annotations

import dataclasses
import multiprocessing.connection
import os
import pickle
import shutil
import socket
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.multiprocessing.spawn import start_processes

from trainperf.measure import launcher, runner, workers
from trainperf.measure.errors import first_line
from trainperf.measure.marks import TRACE
from trainperf.measure.measurement import Measurement
from trainperf.measure.runner import Prepared
from trainperf.measure.timing import synchronize
from trainperf.spec.case import CaseSpec

CPU_PROCESSES = 2
TIMEOUT_S = 900.0
_failed_in_group: list[str] = []  # the launched cases that failed in the group: it cannot be left cleanly
ALL_REDUCE_REPEATS = 5
RAISING_RANKS_S = 5.0  # how long the other ranks may take to end after one raised, before they are killed
# NVLink multicast stays off unless the environment turns it on: on a host whose GPUs others share, a
# program using it can take them out of service; NCCL then picks its ring and tree algorithms
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class DistributedError(RuntimeError):
    """A data-parallel case that failed: what each failing rank raised, one line each."""


def launched() -> launcher.Launch | None:
    return launcher.from_environment(os.environ)


def world_size(device: torch.device) -> int:
    """The launcher's world; else one process per visible GPU, two on the CPU."""
    launch = launched()
    if launch is not None:
        return launch.world
    return torch.cuda.device_count() if device.type == "cuda" else CPU_PROCESSES


def unavailable(device: torch.device) -> str | None:
    """Why data-parallel cases cannot run here, or None."""
    if not dist.is_available():
        return "this torch build has no torch.distributed"
    if launched() is not None and world_size(device) < 2:
        return "data-parallel cases need 2 or more processes; the launcher started 1 (WORLD_SIZE=1)"
    if device.type == "cuda" and world_size(device) < 2:
        return f"data-parallel cases need 2 or more GPUs; this machine has {world_size(device)}"
    return None


def run_case(spec: CaseSpec, keep: Path | None = None, timeout_s: float = TIMEOUT_S) -> Measurement:
    """Train the case in ``world_size(spec.device)`` processes; rank 0's measurement, its communication
    figures under ``communication``; rank 0's traced iteration goes to ``keep`` when given.
    Raises DistributedError naming every rank that failed. Under a launcher, this process is its rank."""
    launch = launched()
    if launch is not None:
        return _run_launched(spec, launch, keep, timeout_s)
    world = world_size(spec.device)
    with tempfile.TemporaryDirectory(prefix="trainperf-ddp-") as name:
        folder = Path(name)
        args = (world, _free_port(), spec, folder, keep, dict(os.environ))
        context = start_processes(_rank_main, args=args, nprocs=world, join=False, start_method=_start_method())
        errors = [folder / f"rank{r}.error" for r in range(world)]  # a rank stopped before it began has none
        stopped = _join(context, timeout_s, errors)
        failed = [f"rank {r}: {path.read_text().strip()}" for r, path in enumerate(errors) if _written(path)]
        if stopped or failed:
            kept = _show_tracebacks(folder, keep, world)
            raise DistributedError("; ".join(failed + ([stopped] if stopped else []) + kept))
        with open(folder / "rank0.pickle", "rb") as handle:
            measurement: Measurement = pickle.load(handle)
    return measurement


def _start_method() -> str:
    """Ranks are forked from multiprocessing's fork server, which imported torch and this module once for
    the session: a spawned rank imports them afresh, seconds of CPU each. The server is started like a
    spawned process (it never starts CUDA), so its ranks start as fresh as spawned ones; each takes the
    environment of the case's start (``_rank_main``)."""
    context = torch.multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch._dynamo", __name__])
    return "forkserver"


def _show_tracebacks(folder: Path, keep: Path | None, world: int) -> list[str]:
    """The failed ranks' tracebacks on standard error (pytest shows it under the failure) and, given
    ``keep``, copied there, as the spawned ranks' temporary folder goes with the case."""
    shown = []
    for rank in range(world):
        path = folder / f"rank{rank}.traceback"
        if path.exists():
            print(f"rank {rank} of {world} raised:\n{path.read_text()}", file=sys.stderr)
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                shown.append(f"traceback in {shutil.copy(path, keep / path.name)}")
    return shown


def _written(path: Path) -> bool:
    return path.exists() and bool(path.read_text().strip())


def _join(context: Any, timeout_s: float, errors: list[Path]) -> str | None:
    """Wait for every rank. Once one fails, the others have ``RAISING_RANKS_S`` to end (a moment behind,
    they may be failing too, and each writes why to its ``errors`` file); past that, or past ``timeout_s``,
    every rank still running is killed. Why they stopped, or None: every rank ended, each failed one
    having written what it raised."""
    processes = context.processes
    deadline = time.monotonic() + timeout_s
    failed_at: float | None = None
    try:
        while alive := [process for process in processes if process.is_alive()]:
            now = time.monotonic()
            if failed_at is None and any(process.exitcode for process in processes):
                failed_at = now
            if failed_at is not None and now > failed_at + RAISING_RANKS_S:
                break
            if now > deadline:
                return f"stopped after {timeout_s:.0f} s (every rank killed)"
            multiprocessing.connection.wait([process.sentinel for process in alive], timeout=1.0)
        return _exited(processes, errors)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()


def _exited(processes: list[Any], errors: list[Path]) -> str | None:
    """'rank 1 exited with code -9' for the first rank that failed without writing what it raised."""
    for rank, process in enumerate(processes):
        if process.exitcode and not _written(errors[rank]):
            return f"rank {rank} exited with code {process.exitcode}"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rank_main(
    rank: int, world: int, port: int, spec: CaseSpec, folder: Path, keep: Path | None, environ: dict[str, str]
) -> None:
    """One started rank: join the group, train the case; rank 0 writes the result. Its environment is
    the case's starter's (the fork server keeps the one it started with)."""
    error = folder / f"rank{rank}.error"
    error.write_text("")
    os.environ.clear()
    os.environ.update({**environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    try:
        device = _rank_device(spec.device, rank)
        if device.type == "cpu" or _steps_on_host(spec):
            torch.set_num_threads(max(1, workers.usable_cores() // world))
        _join_group(device, rank, world)
        measurement = _train(spec, device, keep or folder)
        if rank == 0:
            with open(folder / "rank0.pickle", "wb") as handle:
                pickle.dump(measurement, handle)
    except BaseException as failure:
        error.write_text(f"{type(failure).__name__}: {first_line(failure, 300)}")
        (folder / f"rank{rank}.traceback").write_text(traceback.format_exc())
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _steps_on_host(spec: CaseSpec) -> bool:
    """Whether the ranks' optimizer steps run on the host (FSDP's CPU offload): like ranks on a CPU, they
    share its cores, as each would otherwise start a thread per core and the two would oversubscribe them."""
    return bool((spec.optimization.ddp or {}).get("cpu_offload"))


def _run_launched(spec: CaseSpec, launch: launcher.Launch, keep: Path | None, timeout_s: float) -> Measurement:
    """This process as rank ``launch.rank`` of the launcher's group, joined at the first data-parallel
    case and kept for the session, its collectives timing out after ``timeout_s``; every rank returns its
    own measurement, rank 0's is the one reported."""
    device = _rank_device(spec.device, launch.local_rank)
    try:
        if not dist.is_initialized():
            # a collective that times out aborts NCCL's communicators and raises here, instead of ending
            # the process (torchrun sets 1), which would leave no run document
            os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "2"
            # NCCL's watchdog otherwise dumps its debug information first, past the case's time limit
            os.environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "0")
            # env://: the launcher's MASTER_ADDR and MASTER_PORT
            _join_group(device, launch.rank, launch.world, timeout_s)
        return _train(spec, device, keep or Path(tempfile.mkdtemp(prefix="trainperf-ddp-")))
    except Exception as failure:
        _failed_in_group.append(spec.key)
        _abort_group()
        raise DistributedError(f"rank {launch.rank}: {type(failure).__name__}: {first_line(failure, 300)}") from failure


def _abort_group() -> None:
    """Abort the group's communicators at once: a collective still queued on the GPU would otherwise wait
    for a rank that is gone until its own timeout."""
    abort = getattr(dist.distributed_c10d, "_abort_process_group", None)
    if abort is not None and dist.is_initialized():
        abort()


def leave_group() -> None:
    """At the end of a launched session: leave the launcher's group if a data-parallel case joined it,
    unless a case failed in it: another rank may be gone, and leaving would wait for it."""
    if dist.is_available() and dist.is_initialized() and not _failed_in_group:
        dist.destroy_process_group()


def _rank_device(device: torch.device, local_rank: int) -> torch.device:
    if device.type != "cuda":
        return torch.device("cpu")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def _join_group(device: torch.device, rank: int, world: int, timeout_s: float = 300.0) -> None:
    for name, value in MULTICAST_OFF.items():
        os.environ.setdefault(name, value)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s))


def _train(spec: CaseSpec, device: torch.device, folder: Path) -> Measurement:
    """The case trained as this rank, its communication measured after; FLOPs per process (MFU per GPU)."""
    world = dist.get_world_size()
    figures: dict[str, Any] = {"processes": world, "backend": dist.get_backend()}

    def communication(case: Prepared) -> None:
        figures.update(_comm(case, device, folder))

    measurement = runner.run_case(dataclasses.replace(spec, device=device), then=communication)
    if measurement.flops_per_iteration is not None:
        measurement.flops_per_iteration /= world
    measurement.communication = figures
    return measurement


def _comm(case: Prepared, device: torch.device, folder: Path) -> dict[str, Any]:
    """All-reduce bus bandwidth for the case's gradients on the rank's device (not where its parameters
    live: FSDP's CPU offload keeps them in host memory, where NCCL has no backend), and on a GPU the share
    of one traced iteration's communication that ran behind computation."""
    parameters = [p for p in case.model.parameters() if p.requires_grad]
    figures: dict[str, Any] = {"gradient_bytes": sum(p.numel() * p.element_size() for p in parameters)}
    figures["all_reduce_busbw_gbs"] = _bus_bandwidth(sum(p.numel() for p in parameters), device)
    if device.type == "cuda":
        figures.update(_traced_overlap(case, folder))
    return figures


def _bus_bandwidth(numel: int, device: torch.device) -> float:
    """GB/s by NCCL-tests' definition: bytes x 2(n-1)/n over the time of one float32 all-reduce."""
    buffer = torch.ones(numel, dtype=torch.float32, device=device)
    dist.all_reduce(buffer)
    synchronize(device)
    start = time.perf_counter()
    for _ in range(ALL_REDUCE_REPEATS):
        dist.all_reduce(buffer)
    synchronize(device)
    seconds = (time.perf_counter() - start) / ALL_REDUCE_REPEATS
    world = dist.get_world_size()
    return buffer.numel() * buffer.element_size() * 2 * (world - 1) / world / seconds / 1e9


def _traced_overlap(case: Prepared, folder: Path) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    from trainperf.measure.overlap import hidden_communication
    from trainperf.measure.torch_trace import read_torch_trace

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as traced:
        case.step(case.fetch()[0])
        synchronize(next(case.model.parameters()).device)
    if dist.get_rank() != 0:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TRACE
    traced.export_chrome_trace(str(path))
    found = hidden_communication(read_torch_trace(path).launches)
    if found is None:
        return {"communication_ms": 0.0, "hidden_share": None}
    total_ns, share = found
    return {"communication_ms": total_ns / 1e6, "hidden_share": share, "trace": str(path)}
