"""A BERT-base-like encoder (12 layers, 12 heads, 768 wide, sequences of 512, vocabulary 30522) trained
with the masked-language-model loss on the standard library's source (see ``workloads/text.py``).

Masking follows BERT: 15% of positions are predicted; of those 80% become MASK, 10% a random token and
10% stay. Window k's masks come from a generator seeded by k, so every case sees the same data.
Workload options: ``attention``, ``optimizer``, ``vocab_multiple`` and ``batch_scale`` as for GPT-2.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset
from trainperf import FULL, TINY, Batch, Metric, Optimization, Training, merge_options

from workloads import text
from workloads.sampling import endless_loader
from workloads.transformer import (
    Trunk,
    TrunkConfig,
    init_weights,
    padded,
    token_training,
)

OPTIONS = {"attention": "naive", "optimizer": "for_loop", "vocab_multiple": 1, "batch_scale": 1}
MASKED_SHARE = 0.15
IGNORED = -100  # label of a position that is not predicted


@dataclass(frozen=True)
class BertConfig:
    layers: int
    heads: int
    width: int
    context: int
    vocab_size: int
    batch_size: int
    lr: float
    warmup: int
    iters: int
    corpus_chars: int
    eval_windows: int


CONFIGS = {
    TINY: BertConfig(2, 2, 64, 64, 1024, 16, 3e-3, 3, 20, 1_000_000, 64),
    FULL: BertConfig(12, 12, 768, 512, 30522, 32, 3e-4, 5, 20, 8_000_000, 64),
}


def mask_window(window: torch.Tensor, seed: int, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input with masked positions, labels: the original token where masked, else IGNORED)."""
    generator = torch.Generator().manual_seed(seed)
    chosen = torch.rand(window.shape, generator=generator) < MASKED_SHARE
    roll = torch.rand(window.shape, generator=generator)
    random_tokens = torch.randint(0, vocab_size - 2, window.shape, generator=generator)
    inputs = window.clone()
    inputs[chosen & (roll < 0.8)] = text.mask_id(vocab_size)
    swapped = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swapped] = random_tokens[swapped]
    labels = torch.where(chosen, window, torch.full_like(window, IGNORED))
    return inputs, labels


class MaskedTokens(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Item k: training window ``k % n`` masked with seed k."""

    def __init__(self, windows: torch.Tensor, vocab_size: int) -> None:
        self.windows, self.vocab_size = windows, vocab_size

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        return mask_window(self.windows[k % len(self.windows)], k, self.vocab_size)


class Encoder(nn.Module):
    def __init__(self, config: BertConfig, trunk: TrunkConfig, vocab_rows: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_rows, config.width)
        self.position = nn.Embedding(config.context, config.width)
        self.trunk = Trunk(trunk)
        self.transform = nn.Sequential(nn.Linear(config.width, config.width), nn.GELU(), nn.LayerNorm(config.width))
        self.decoder = nn.Linear(config.width, vocab_rows)
        self.decoder.weight = self.embed.weight  # tied, as in BERT
        init_weights(self, config.layers)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.size(1), device=tokens.device)
        hidden = self.trunk(self.embed(tokens) + self.position(positions))
        return self.decoder(self.transform(hidden))  # type: ignore[no-any-return]


def masked_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    inputs, labels = batch
    logits = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORED)


class Bert:
    """Masked-language modelling; metric: validation MLM loss on held-out windows, fixed masks."""

    name = "bert"
    metric = Metric("val_loss", higher_is_better=False, default_tolerance=0.15, min_gain=0.15)

    def iterations(self, size: str) -> tuple[int, int]:
        config = CONFIGS[size]
        return config.warmup, config.iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = CONFIGS[size]
        options = merge_options(OPTIONS, optimization.options, optimization.name)
        trunk = TrunkConfig(
            config.layers, config.heads, config.width, config.context, causal=False, attention=options["attention"]
        )
        model = Encoder(config, trunk, padded(config.vocab_size, options["vocab_multiple"])).to(device)
        ids = text.token_ids(config.corpus_chars, config.vocab_size)
        train, held_out = text.split_windows(ids, config.context)
        batch_size = config.batch_size * options["batch_scale"]
        loader = endless_loader(MaskedTokens(train, config.vocab_size), batch_size, optimization, device)
        evaluation = held_out[: config.eval_windows]
        masked = [mask_window(window, -1 - i, config.vocab_size) for i, window in enumerate(evaluation)]
        eval_inputs = torch.stack([m[0] for m in masked]).to(device).split(config.batch_size)
        eval_labels = torch.stack([m[1] for m in masked]).to(device).split(config.batch_size)

        def evaluate(trained: nn.Module) -> float:
            losses = [masked_loss(trained, batch) for batch in zip(eval_inputs, eval_labels, strict=True)]
            return torch.stack(losses).float().mean().item()

        return token_training(model, config, options["optimizer"], loader, masked_loss, evaluate, batch_size)
