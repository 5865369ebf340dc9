"""An endless, seeded shuffle: the sampler every workload's DataLoader reads through."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler
from trainperf import Optimization, loader_settings

SPLIT_SEED = 0


class EndlessShuffle(Sampler[int]):
    """Sample numbers e*n + p for epoch e and a seeded permutation p of range(n), forever."""

    def __init__(self, n: int, seed: int = SPLIT_SEED) -> None:
        self.n, self.seed = n, seed

    def __iter__(self) -> Iterator[int]:
        epoch = 0
        while True:
            order = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + epoch))
            yield from (epoch * self.n + int(i) for i in order)
            epoch += 1


def endless_loader(
    dataset: Dataset[Any],
    batch_size: int,
    optimization: Optimization,
    device: torch.device,
    collate_fn: Callable[[list[Any]], Any] | None = None,
) -> DataLoader[Any]:
    """A DataLoader over an endless shuffle of ``dataset`` with the case's data-path knobs (and a
    collate function of the workload's where its items do not stack)."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=EndlessShuffle(len(dataset)),  # type: ignore[arg-type]
        drop_last=True,
        collate_fn=collate_fn,
        **loader_settings(optimization, device),  # type: ignore[arg-type]
    )
