"""Sharded data parallelism on the CPU (gloo): ZeRO-1 and FSDP2 train as DDP does, the optimizer follows
the sharded parameters with its hyperparameters, and bad settings are named when a case is declared."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from toy_workload import Toy
from trainperf import Optimization
from trainperf.measure import distributed
from trainperf.measure.data_parallel import data_parallel
from trainperf.spec.case import CaseSpec
from trainperf.spec.workload import Training

CPU = torch.device("cpu")


def trained_losses(settings: dict) -> list[float]:
    measurement = distributed.run_case(CaseSpec(Toy(), Optimization("case", ddp=settings), CPU, "tiny", 2, 5))
    return measurement.losses


def test_zero1_and_fsdp_train_the_same_losses_as_ddp_over_two_gloo_processes() -> None:
    ddp = trained_losses({})
    assert trained_losses({"zero": True}) == ddp  # the same arithmetic, the states kept on one rank each
    for mode in ("full_shard", "shard_grad_op"):  # gradients reduce-scattered instead of all-reduced
        assert trained_losses({"fsdp": mode}) == pytest.approx(ddp, rel=1e-5)
    assert not multiprocessing.active_children()


class Blocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(2))
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


@pytest.fixture
def group_of_one(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'store'}")
    yield
    dist.destroy_process_group()


def training_of(model: torch.nn.Module) -> Training:
    decayed = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() == 1]
    groups = [{"params": decayed, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=0.01, betas=(0.9, 0.95), foreach=False)
    return Training(model, optimizer, [], lambda m, b: m(b[0]).sum(), lambda m: 0.0, 1)


@pytest.mark.usefixtures("group_of_one")
def test_fsdp_shards_each_block_and_rebuilds_the_optimizer_over_the_shards() -> None:
    model = Blocks()
    training = training_of(model)
    sharded = data_parallel(model, CPU, {"fsdp": "full_shard", "param_dtype": "bfloat16"}, training)
    assert all(isinstance(m, FSDPModule) for m in (*model.blocks, model))
    optimizer = training.optimizer
    assert isinstance(optimizer, torch.optim.AdamW)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    assert optimizer.defaults["betas"] == (0.9, 0.95) and optimizer.defaults["foreach"] is False
    kept = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert kept == {id(p) for p in sharded.parameters()} and all(isinstance(p, DTensor) for p in sharded.parameters())
    sharded(torch.ones(3, 4)).sum().backward()
    optimizer.step()  # the states are created for the shards


@pytest.mark.usefixtures("group_of_one")
def test_zero1_keeps_ddp_and_shards_the_optimizer_states() -> None:
    model = Blocks()
    training = training_of(model)
    data_parallel(model, CPU, {"zero": True}, training)
    optimizer = training.optimizer
    assert isinstance(optimizer, ZeroRedundancyOptimizer) and optimizer.optim.__class__ is torch.optim.AdamW
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"fsdp": "hybrid"}, r"fsdp must be one of \('full_shard', 'shard_grad_op'\), got 'hybrid'"),
        ({"fsdp": "full_shard", "static_graph": True}, r"unknown FSDP settings \['static_graph'\]"),
        ({"zero": True, "cpu_offload": True}, r"unknown ddp settings \['cpu_offload'\]"),
        ({"fsdp": "full_shard", "param_dtype": "bf16"}, "FSDP param_dtype must be one of"),
    ],
)
def test_bad_sharding_settings_are_named(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Optimization("bad", ddp=settings)
