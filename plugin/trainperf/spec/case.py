"""What one case trains (a workload, one of its optimizations, a device, a size) and the ladder of a
workload's cases, whose reference every speedup is measured against."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainperf.spec.optimization import REFERENCE, Optimization
from trainperf.spec.workload import Workload

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class CaseSpec:
    """One case as the runner trains it: what, where, at which size, and how many iterations."""

    workload: Workload
    optimization: Optimization
    device: torch.device
    size: str  # TINY or FULL
    warmup: int
    iters: int

    @property
    def key(self) -> str:
        return case_key(self.workload.name, self.optimization.name)

    def but(self, optimization: Optimization) -> CaseSpec:
        """The same workload, device and iterations with another optimization (the reference, say)."""
        return dataclasses.replace(self, optimization=optimization)


def case_key(workload: str, optimization: str) -> str:
    """The name a case has in baselines and reports: ``workload/optimization``."""
    return f"{workload}/{optimization}"


WORKLOAD_PARTS = ("name", "metric", "iterations", "build")  # what the Workload protocol asks of one


@dataclass(frozen=True)
class Ladder:
    """A workload and its cases, the reference first: each speedup is over that reference, measured in
    the same run (or on demand, when a case is selected without it)."""

    workload: Workload
    cases: Sequence[Optimization]

    def __post_init__(self) -> None:
        missing = [part for part in WORKLOAD_PARTS if not hasattr(self.workload, part)]
        if missing:
            kind = type(self.workload).__name__
            raise TypeError(
                f"{kind} is not a trainperf Workload: it lacks {', '.join(missing)} (a workload has "
                f"{', '.join(WORKLOAD_PARTS)})"
            )
        names = [case.name for case in self.cases]
        if not names or names[0] != REFERENCE:
            raise ValueError(f"{self.workload.name}: a ladder starts with its {REFERENCE!r} case, got {names[:1]}")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"{self.workload.name}: case names {repeated} appear more than once")

    @property
    def reference(self) -> Optimization:
        return self.cases[0]

    @staticmethod
    def ids(optimization: Optimization) -> str:
        """The test id of a case: ``pytest.mark.parametrize(..., ids=Ladder.ids)``."""
        return optimization.name


def case_folder(root: Path, case_key: str) -> Path:
    """A case's own folder under ``root``, named from its key: ``gpt2/stack`` -> ``root/gpt2-stack``."""
    return root / re.sub(r"[^A-Za-z0-9_.-]+", "-", case_key)
