"""8-bit AdamW (torchao) as the GPT-2 workloads' ``optimizer`` option at the tiny size: its moments are
stored in 8 bits, and it trains to the held-out loss of float32 AdamW within the workload's tolerance.
Its memory saving is the GPU suite's to measure."""

from __future__ import annotations

import pytest
import torch
from trainperf import TINY, Optimization

from workloads import float8
from workloads.gpt2 import GPT2
from workloads.transformer import ADAMW_8BIT, adamw

TORCHAO = f"torchao not installed: pip install '{float8.REQUIREMENT}'"


def trained_loss(optimizer: str, steps: int = 40) -> float:
    torch.manual_seed(0)
    workload = GPT2()
    training = workload.build(torch.device("cpu"), TINY, Optimization(optimizer, options={"optimizer": optimizer}))
    for _, batch in zip(range(steps), training.batches, strict=False):
        training.loss(training.model, batch).backward()
        training.optimizer.step()
        training.optimizer.zero_grad(set_to_none=True)
    return training.evaluate(training.model)


def test_the_large_weights_moments_are_stored_in_8_bits() -> None:
    pytest.importorskip("torchao.optim", reason=TORCHAO)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 8))
    optimizer = adamw(model, 1e-3, ADAMW_8BIT)
    model(torch.randn(4, 256)).sum().backward()
    optimizer.step()
    big, small = model[0].weight, model[1].weight  # 65,536 and 2,048 elements
    assert optimizer.state[big]["exp_avg"].codes.dtype == torch.uint8
    assert optimizer.state[big]["exp_avg_sq"].codes.dtype == torch.uint8
    assert optimizer.state[small]["exp_avg"].dtype == torch.float32  # too small to quantize: kept whole


def test_it_trains_to_float32_adamws_held_out_loss() -> None:
    pytest.importorskip("torchao.optim", reason=TORCHAO)
    reference, quantized = trained_loss("fused"), trained_loss(ADAMW_8BIT)
    assert abs(quantized - reference) <= GPT2.metric.default_tolerance
    assert quantized < 0.9 * trained_loss("fused", steps=0)  # it learned


def test_an_unknown_optimizer_is_named() -> None:
    with pytest.raises(ValueError, match=r"optimizer must be one of \('for_loop', 'foreach', 'fused', 'adamw_8bit'\)"):
        adamw(torch.nn.Linear(2, 2), 1e-3, "lion")
