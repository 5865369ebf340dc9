"""8-bit AdamW (torchao) as the GPT-2 workloads' ``optimizer`` option at the tiny size: its moments are
stored in 8 bits, and it trains to the held-out loss of float32 AdamW within the workload's tolerance.
Its memory saving is the GPU suite's to measure."""

from __future__ import annotations

import pytest
import torch
from trainperf import TINY, Optimization, Training

from workloads import float8
from workloads.gpt2 import GPT2
from workloads.transformer import ADAMW_8BIT, adamw

TORCHAO = f"torchao not installed: pip install '{float8.REQUIREMENT}'"


def trained(optimizer: str, steps: int = 40) -> tuple[float, Training]:
    """The tiny GPT-2 trained ``steps`` steps with ``optimizer``: its held-out loss, and the training."""
    torch.manual_seed(0)
    workload = GPT2()
    training = workload.build(torch.device("cpu"), TINY, Optimization(optimizer, options={"optimizer": optimizer}))
    for _, batch in zip(range(steps), training.batches, strict=False):
        training.loss(training.model, batch).backward()
        training.optimizer.step()
        training.optimizer.zero_grad(set_to_none=True)
    return training.evaluate(training.model), training


def test_it_trains_to_float32_adamws_held_out_loss_with_the_large_weights_moments_in_8_bits() -> None:
    """One 8-bit training for both (torchao compiles its step for each weight's shape, seconds each on
    two cores): its held-out loss, and where its moments are kept."""
    pytest.importorskip("torchao.optim", reason=TORCHAO)
    (reference, _), (quantized, training) = trained("fused"), trained(ADAMW_8BIT)
    assert abs(quantized - reference) <= GPT2.metric.default_tolerance
    assert quantized < 0.9 * trained("fused", steps=0)[0]  # it learned
    weights = dict(training.model.named_parameters())
    big, small = weights["embed.weight"], next(w for w in weights.values() if w.numel() == 64)  # 65,536 and 64
    state = training.optimizer.state
    assert state[big]["exp_avg"].codes.dtype == torch.uint8
    assert state[big]["exp_avg_sq"].codes.dtype == torch.uint8
    assert state[small]["exp_avg"].dtype == torch.float32  # too small to quantize: kept whole


def test_an_unknown_optimizer_is_named() -> None:
    with pytest.raises(ValueError, match=r"optimizer must be one of \('for_loop', 'foreach', 'fused', 'adamw_8bit'\)"):
        adamw(torch.nn.Linear(2, 2), 1e-3, "lion")
