"""Inside one rank of a data-parallel case: the model wrapped in DistributedDataParallel (optionally with
ZeRO-1's sharded optimizer states) or sharded with FSDP2's ``fully_shard``, with the case's settings, and
the rank's slice of each batch. ``distributed.py`` starts the ranks.

Settings (``Optimization.ddp``): DDP's ``bucket_cap_mb``, ``gradient_as_bucket_view``, ``static_graph``,
``comm_hook`` and ``no_sync``; ``zero`` (True: ZeroRedundancyOptimizer); ``fsdp`` ("full_shard": parameters
freed after the forward pass, or "shard_grad_op": kept until the backward pass), with ``param_dtype``
("bfloat16": FSDP's mixed precision, gradients reduced in float32) and ``cpu_offload`` (True).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

from trainperf.spec.workload import Batch, Training

FSDP_RESHARD = {"full_shard": True, "shard_grad_op": False}


def data_parallel(
    model: torch.nn.Module, device: torch.device, settings: Mapping[str, Any], training: Training
) -> torch.nn.Module:
    """``model`` wrapped or sharded with the case's settings (in a rank's process). Where that changes the
    parameters or how their states are kept, ``training.optimizer`` is replaced by the same optimizer,
    with the same hyperparameters, over the new ones."""
    if not dist.is_initialized():
        raise RuntimeError(
            "a data-parallel case runs through trainperf.measure.distributed.run_case, one process per rank"
        )
    if "fsdp" in settings:
        return _fully_sharded(model, settings, training)
    keywords = {k: settings[k] for k in ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph") if k in settings}
    wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None, **keywords)
    hook = settings.get("comm_hook")
    if hook:
        wrapped.register_comm_hook(None, getattr(default_hooks, f"{hook}_hook"))
    if settings.get("zero") and training.optimizer is not None:
        optimizer = training.optimizer
        groups = [dict(group) for group in optimizer.param_groups]  # the same parameters, each rank's states
        training.optimizer = ZeroRedundancyOptimizer(groups, optimizer_class=type(optimizer), **_settings(optimizer))
    return wrapped


def _fully_sharded(model: torch.nn.Module, settings: Mapping[str, Any], training: Training) -> torch.nn.Module:
    """FSDP2: each module of every ``nn.ModuleList`` (the transformer blocks) its own unit, then the rest."""
    reshard = FSDP_RESHARD[settings["fsdp"]]  # the settings were checked when the case was declared
    dtype = settings.get("param_dtype")
    policy = MixedPrecisionPolicy()  # FSDP's default: compute in the parameters' own dtype
    if dtype:
        policy = MixedPrecisionPolicy(param_dtype=getattr(torch, dtype), reduce_dtype=torch.float32)
    keywords: dict[str, Any] = {"reshard_after_forward": reshard, "mp_policy": policy}
    if settings.get("cpu_offload"):
        keywords["offload_policy"] = CPUOffloadPolicy()
    names = {id(p): name for name, p in model.named_parameters()}
    for blocks in [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]:
        for block in blocks:
            fully_shard(block, **keywords)
    fully_shard(model, **keywords)
    if training.optimizer is not None:  # fully_shard replaced every parameter with its shard (a DTensor)
        sharded = dict(model.named_parameters())
        optimizer = training.optimizer
        groups = [{**g, "params": [sharded[names[id(p)]] for p in g["params"]]} for g in optimizer.param_groups]
        training.optimizer = type(optimizer)(groups, **_settings(optimizer))
    return model


def _settings(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer's defaults that its constructor takes (AdamW keeps one it sets itself)."""
    accepted = inspect.signature(type(optimizer).__init__).parameters
    return {k: v for k, v in optimizer.defaults.items() if k in accepted}


def own_slice(batch: Batch) -> Batch:
    """This rank's equal slice of a batch every rank loaded."""
    world, rank = dist.get_world_size(), dist.get_rank()
    rows = len(batch[0])
    if rows % world:
        raise ValueError(f"a batch of {rows} does not split evenly over {world} processes")
    return tuple(tensor.chunk(world)[rank] for tensor in batch)
