"""A transformers causal language model as a workload: predict the next token of sequences from a
random Markov chain (``synthetic.MarkovTokens``).

The model is built from its config with random weights (``AutoModelForCausalLM.from_config``: nothing
is downloaded). Metric: validation loss (nats per token) on held-out sequences of the same chain.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainperf.adapters.size import Size, missing_package, workload_name
from trainperf.adapters.synthetic import HELD_OUT_SEED, TRAIN_SEED, MarkovTokens
from trainperf.spec.optimization import Metric, Optimization
from trainperf.spec.workload import FULL, TINY, Batch, Training

DATA_VOCAB = 1024  # the most tokens the chain uses: the first eighth of the model's vocabulary, up to this
POOL_SEQUENCES = 2048  # training sequences, sampled with replacement each step
HELD_OUT_SEQUENCES = 64
FULL_RUN = Size(batch=16, lr=3e-4)  # at the model's own context, up to 1,024 tokens
TINY_RUN = Size(batch=8, length=32, warmup=3, iters=20, lr=3e-3)
# the tiny model, where no tiny config is given: these standard config names, where the config has them
TINY_SHAPE = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "head_dim": 32,
    "max_position_embeddings": 64,
    "vocab_size": 512,
}


def from_transformers(
    config: Any,
    *,
    name: str | None = None,
    full: Size = FULL_RUN,
    tiny: Size = TINY_RUN,
    tiny_config: Any | None = None,
) -> CausalLM:
    """A workload that trains a causal language model built from ``config`` (a transformers
    ``PretrainedConfig``, e.g. ``LlamaConfig(...)``); ``tiny_config`` replaces it at the tiny size (default:
    the config shrunk by ``TINY_SHAPE``). Named ``hf_<model_type>`` unless ``name`` is given."""
    tiny_config = tiny_config if tiny_config is not None else shrunk(config)
    configs = {FULL: config, TINY: tiny_config}
    return CausalLM(name or workload_name("hf", config.model_type), configs, {FULL: full, TINY: tiny})


def shrunk(config: Any) -> Any:
    """A copy of ``config`` with the small shape of ``TINY_SHAPE`` (the names it has and has set)."""
    tiny = copy.deepcopy(config)
    for key, value in TINY_SHAPE.items():
        if getattr(tiny, key, None) is not None:
            setattr(tiny, key, value)
    return tiny


def next_token_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    inputs, targets = batch
    return F.cross_entropy(model(input_ids=inputs).logits.flatten(0, 1), targets.flatten())


class CausalLM:
    metric = Metric("val_loss", higher_is_better=False, default_tolerance=0.15, min_gain=0.15)

    def __init__(self, name: str, configs: Mapping[str, Any], sizes: Mapping[str, Size]) -> None:
        self.name, self.configs, self.sizes = name, configs, sizes

    def iterations(self, size: str) -> tuple[int, int]:
        return self.sizes[size].warmup, self.sizes[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        run, config = self.sizes[size], self.configs[size]
        context = run.length or min(1024, config.max_position_embeddings)
        chain = MarkovTokens(min(DATA_VOCAB, max(2, config.vocab_size // 8)))
        train = chain.sequences(POOL_SEQUENCES, context + 1, TRAIN_SEED).to(device)
        held_out = chain.sequences(HELD_OUT_SEQUENCES, context + 1, HELD_OUT_SEED).to(device)
        generator = torch.Generator(device).manual_seed(TRAIN_SEED)

        def batches() -> Iterator[Batch]:
            while True:
                rows = train[torch.randint(0, len(train), (run.batch,), device=device, generator=generator)]
                yield rows[:, :-1], rows[:, 1:]

        def evaluate(model: nn.Module) -> float:
            losses = [next_token_loss(model, (rows[:, :-1], rows[:, 1:])) for rows in held_out.split(run.batch)]
            return float(torch.stack(losses).mean())

        torch.manual_seed(0)
        model = create(config).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=run.lr),
            batches=batches(),
            loss=next_token_loss,
            evaluate=evaluate,
            samples_per_iteration=run.batch * context,
            sample_unit="tokens",
        )


def create(config: Any) -> nn.Module:
    """The model with random weights, in float32 (autocast is the cases' business), without a KV cache."""
    try:
        from transformers import AutoModelForCausalLM
    except Exception as error:  # not installed, or its import failed
        raise missing_package("transformers", "trainperf.adapters.from_transformers", error) from error
    config = copy.deepcopy(config)
    config.use_cache = False
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-any-return]
