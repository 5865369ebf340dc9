"""The FLOPs of one forward and backward pass, counted by torch's ``FlopCounterMode`` by op, with the
input shapes of each op's largest call: what a failure shows when the FLOPs of an iteration moved
("aten.mm: (256, 64)x(64, 64) -> (256, 96)x(96, 96)"). The same code on the same batch counts the
same FLOPs on any machine, so a change is a change of the model or its inputs (a wider layer, a longer
sequence), which ATen-op counts alone do not see."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from trainperf.spec.workload import Batch


@dataclass(frozen=True)
class Flops:
    """One forward and backward pass's FLOPs: in all, by op, and the shapes of each op's largest call."""

    total: int
    by_op: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"flops": self.total, "flops_by_name": self.by_op, "flop_shapes": self.shapes}


def count_flops(
    model: torch.nn.Module, loss_fn: Callable[[torch.nn.Module, Batch], torch.Tensor], batch: Batch
) -> Flops:
    """FLOPs of one forward + backward on ``batch`` (matmuls, convolutions, attention), counted by
    PyTorch. cuDNN's autotuner stays off in this untimed pass: it would time every algorithm of every
    float32 convolution, shapes a mixed-precision case never trains. Code the workload compiled itself
    runs eagerly here: a compiled frame first called under the counter's dispatch mode is never
    compiled afterwards."""
    largest: dict[str, tuple[int, str]] = {}
    counter = FlopCounterMode(display=False, custom_mapping={op: _noting(op, largest) for op in flop_registry})
    autotune, torch.backends.cudnn.benchmark = torch.backends.cudnn.benchmark, False
    try:
        with _eager(), counter:
            loss_fn(model, batch).backward()
    finally:
        torch.backends.cudnn.benchmark = autotune
    model.zero_grad(set_to_none=True)
    by_op = {_name(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items() if n}
    return Flops(
        int(counter.get_total_flops()), by_op, {op: shapes for op, (_, shapes) in largest.items() if op in by_op}
    )


def _noting(op: Any, largest: dict[str, tuple[int, str]]) -> Callable[..., int]:
    """torch's own formula for ``op``, noting the input shapes of its call of most FLOPs."""
    formula = flop_registry[op]

    def counted(*args: Any, out_val: Any = None, **kwargs: Any) -> int:
        flops = int(formula(*args, out_val=out_val, **kwargs))
        name = _name(op)
        if flops > largest.get(name, (-1, ""))[0]:
            largest[name] = (flops, "x".join(str(tuple(a.shape)) for a in args if isinstance(a, torch.Tensor)))
        return flops

    counted._get_raw = True  # type: ignore[attr-defined]  # given tensors, as the registry's own formulas are
    return counted


def _name(op: Any) -> str:
    """``aten.mm`` for an op, the name of a higher-order op (flex attention)."""
    return op.name() if callable(getattr(op, "name", None)) else str(op)


def _eager() -> contextlib.AbstractContextManager[None]:
    """torch.compile's directives ignored, where dynamo is loaded (a workload compiled something)."""
    if "torch._dynamo" not in sys.modules:
        return contextlib.nullcontext()
    return cast("contextlib.AbstractContextManager[None]", torch.compiler.set_stance("force_eager"))
