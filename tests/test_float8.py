"""FP8 training's plumbing at the tiny size: which layers torchao converts, a training step through them,
and the one-line skip where torchao is missing. Its speed is the GPU suite's to measure."""

from __future__ import annotations

import pytest
import torch
from trainperf import TINY, Optimization

from workloads.float8 import fp8_eligible, fp8_weights, to_float8
from workloads.gpt2 import GPT2


def test_every_block_linear_but_not_the_output_layer_trains_in_fp8() -> None:
    float8 = pytest.importorskip(
        "torchao.float8.float8_linear", reason="torchao not installed: pip install 'torchao==0.18.0'"
    )
    training = GPT2().build(torch.device("cpu"), TINY, Optimization("fp8", options={"float8": "rowwise"}))
    model = training.model
    converted = {name for name, m in model.named_modules() if isinstance(m, float8.Float8Linear)}
    assert len(converted) == 2 * 4  # 2 blocks: attention in and out, MLP up and down
    assert "head" not in converted and type(model.head) is torch.nn.Linear
    loss = training.loss(model, next(iter(training.batches)))
    loss.backward()
    training.optimizer.step()
    assert torch.isfinite(loss) and all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_the_fp8_share_of_flops_counts_the_converted_layers() -> None:
    float8 = pytest.importorskip(
        "torchao.float8.float8_linear", reason="torchao not installed: pip install 'torchao==0.18.0'"
    )
    training = GPT2().build(torch.device("cpu"), TINY, Optimization("fp8", options={"float8": "tensorwise"}))
    converted = sum(m.weight.numel() for m in training.model.modules() if isinstance(m, float8.Float8Linear))
    assert training.flops_per_iteration is not None and training.fp8_flop_share is not None
    fp8_flops = 6 * converted * training.samples_per_iteration
    assert training.fp8_flop_share == pytest.approx(fp8_flops / training.flops_per_iteration)
    assert 0.0 < training.fp8_flop_share < 1.0  # the output layer and attention stay in bf16
    assert GPT2().build(torch.device("cpu"), TINY, Optimization("bf16")).fp8_flop_share is None


def test_fp8_weights_count_the_eligible_layers_only() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Linear(64, 10))
    assert [fp8_eligible(m, n) for n, m in model.named_modules()] == [False, True, False]  # 10 is not a multiple of 16
    assert fp8_weights(model) == 32 * 64


def test_a_model_with_nothing_to_convert_is_an_error() -> None:
    pytest.importorskip("torchao.float8", reason="torchao not installed: pip install 'torchao==0.18.0'")
    with pytest.raises(ValueError, match="no linear layer to convert"):
        to_float8(torch.nn.Sequential(torch.nn.Linear(10, 10)), "rowwise")


def test_an_unknown_recipe_is_named() -> None:
    with pytest.raises(ValueError, match=r"float8 must be one of \('tensorwise', 'rowwise'\), got 'axiswise'"):
        to_float8(torch.nn.Linear(16, 16), "axiswise")
