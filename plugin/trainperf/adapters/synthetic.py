"""Synthetic data that a model can learn and be tested on honestly: held-out samples come from the same
distribution as the training ones, drawn with another seed, so the held-out metric measures learning.

Images: each class is a smooth random pattern; a sample is its class's pattern under fresh noise, drawn on
the device each step (nothing to decode or copy, like timm's own benchmark). Tokens: sequences from a fixed
random Markov chain in which each token has a few equally likely successors, so the best achievable loss
is ``log(branches)`` nats per token, far below the untrained model's ``log(vocab)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

PATTERN_SIDE = 8  # the class patterns' resolution before they are upsampled: smooth, learnable shapes
NOISE = 1.0  # standard deviation of the per-sample noise, about that of the patterns themselves
TRAIN_SEED, HELD_OUT_SEED = 0, 1


class PatternImages:
    """Images of ``classes`` classes at ``side`` x ``side`` pixels, 3 channels, on ``device``."""

    def __init__(self, classes: int, side: int, device: torch.device) -> None:
        if classes < 2 or side < 1:
            raise ValueError(f"pattern images need at least 2 classes and 1 pixel, got {classes} and {side}")
        patterns = torch.randn(classes, 3, PATTERN_SIDE, PATTERN_SIDE, generator=torch.Generator().manual_seed(0))
        self.patterns = F.interpolate(patterns, size=side, mode="bilinear", align_corners=False).to(device)
        self.device = device

    def sample(self, count: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` images and their labels, drawn with ``generator`` (a generator on the device)."""
        labels = torch.randint(0, len(self.patterns), (count,), device=self.device, generator=generator)
        noise = torch.randn((count, *self.patterns.shape[1:]), device=self.device, generator=generator)
        return self.patterns[labels] + NOISE * noise, labels

    def batches(self, count: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Endless training batches of ``count`` fresh images."""
        generator = torch.Generator(self.device).manual_seed(TRAIN_SEED)
        while True:
            yield self.sample(count, generator)

    def held_out(self, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.sample(count, torch.Generator(self.device).manual_seed(HELD_OUT_SEED))


class MarkovTokens:
    """Token sequences over ``vocab`` tokens in which each token has ``branches`` equally likely successors."""

    def __init__(self, vocab: int, branches: int = 4) -> None:
        if vocab < 2 or not 1 <= branches <= vocab:
            raise ValueError(f"a Markov chain needs 2 or more tokens and 1 to vocab branches, got {vocab}, {branches}")
        generator = torch.Generator().manual_seed(0)
        self.successors = torch.multinomial(torch.ones(vocab, vocab), branches, generator=generator)  # distinct
        self.vocab = vocab

    def sequences(self, count: int, length: int, seed: int) -> torch.Tensor:
        """``count`` sequences of ``length`` tokens (int64, on the CPU), all walked at once."""
        generator = torch.Generator().manual_seed(seed)
        tokens = torch.empty(count, length, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, self.vocab, (count,), generator=generator)
        choices = torch.randint(0, self.successors.shape[1], (count, length), generator=generator)
        for position in range(1, length):
            tokens[:, position] = self.successors[tokens[:, position - 1], choices[:, position]]
        return tokens

    @property
    def best_loss(self) -> float:
        """The chain's entropy rate in nats per token: no model can do better on average."""
        return float(torch.tensor(float(self.successors.shape[1])).log())
