"""Does a data-parallel rank forked from the fork server (``trainperf.measure.distributed``) train on a GPU?
One rank (world 1, NCCL) of the GPT-2 data-parallel reference, started after this process has started
CUDA, as a nightly's test process has: the server, started as a spawned process is, must not hold CUDA,
and the rank must start it, join the group and train. On a GPU machine, from the repository's root:
  PYTHONPATH=. python research/studies/forkserver_rank_gpu.py"""

from __future__ import annotations

import os
import pickle
import statistics
import tempfile
from pathlib import Path

import torch
from torch.multiprocessing.spawn import start_processes
from trainperf import TINY
from trainperf.measure import distributed
from trainperf.spec.case import CaseSpec

from workloads.ladders.ddp import DataParallelGPT2, ddp_reference


def main() -> None:
    torch.ones(1, device="cuda").sum().item()  # the test process has started CUDA before its first DDP case
    spec = CaseSpec(DataParallelGPT2(), ddp_reference, torch.device("cuda"), TINY, 3, 10)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        errors = [folder / "rank0.error"]
        args = (1, distributed._free_port(), spec, folder, None, dict(os.environ))
        method = distributed._start_method()
        context = start_processes(distributed._rank_main, args=args, nprocs=1, join=False, start_method=method)
        stopped = distributed._join(context, 300.0, errors)
        print(f"start method {method}; stopped: {stopped}; rank 0's error: {errors[0].read_text()!r}")
        with open(folder / "rank0.pickle", "rb") as handle:
            measurement = pickle.load(handle)
    print(f"rank 0 trained: median {statistics.median(measurement.samples_ms):.2f} ms over "
          f"{len(measurement.samples_ms)} iterations, metric {measurement.metric:.4f}, {measurement.communication}")  # fmt: skip


if __name__ == "__main__":
    main()
