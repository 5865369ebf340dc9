"""Each fetch's calls, as the host-work check counts them, from a DataLoader whose four worker processes
deliver the batches (on the CPU): how they vary without any code changing.

    python research/studies/worker_fetch_calls.py SAMPLE_S STEP_S     # 0 0.001: fast workers; 0.002 0.0005: slow

SAMPLE_S is the time a worker takes per sample, STEP_S the training step's (a sleep). Prints the count of
each of 40 fetches after 30 untimed ones, and how often each count came.
"""

from __future__ import annotations

import collections
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from trainperf.measure import host_work


class Images(Dataset[tuple[torch.Tensor, int]]):
    def __init__(self, sample_s: float) -> None:
        self.sample_s = sample_s

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.sample_s)
        return torch.full((3, 32, 32), float(index % 7)), index % 10


def main(sample_s: float, step_s: float) -> None:
    loader = DataLoader(Images(sample_s), batch_size=32, num_workers=4, persistent_workers=True, prefetch_factor=4)
    batches = iter(loader)
    for _ in range(30):
        next(batches)
        time.sleep(step_s)

    def step(_batch: object) -> None:
        time.sleep(step_s)

    counted = host_work.calls_per_iteration(step, lambda: (next(batches), 0.0), iterations=40)
    print(sample_s, step_s, list(counted.fetches), collections.Counter(counted.fetches).most_common())


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]))
