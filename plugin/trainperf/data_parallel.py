"""Inside one rank of a data-parallel case: the model wrapped in DistributedDataParallel with the case's
settings, and the rank's slice of each batch. ``distributed.py`` starts the ranks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from trainperf.workload import Batch


def data_parallel(model: torch.nn.Module, device: torch.device, settings: Mapping[str, Any]) -> torch.nn.Module:
    """``model`` wrapped in DistributedDataParallel with the case's settings (in a rank's process)."""
    if not dist.is_initialized():
        raise RuntimeError("a data-parallel case runs through trainperf.distributed.run_case, one process per rank")
    keywords = {k: settings[k] for k in ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph") if k in settings}
    wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None, **keywords)
    hook = settings.get("comm_hook")
    if hook:
        wrapped.register_comm_hook(None, getattr(default_hooks, f"{hook}_hook"))
    return wrapped


def own_slice(batch: Batch) -> Batch:
    """This rank's equal slice of a batch every rank loaded."""
    world, rank = dist.get_world_size(), dist.get_rank()
    rows = len(batch[0])
    if rows % world:
        raise ValueError(f"a batch of {rows} does not split evenly over {world} processes")
    return tuple(tensor.chunk(world)[rank] for tensor in batch)
