"""An MLP-Mixer image classifier, as a user would bring one: scikit-learn's handwritten digits upsampled
to 32 x 32, cut into 4 x 4 patches, mixed across patches and across channels by MLPs.

Large batches of dense matrix products: a GPU-bound case. Metric: accuracy on held-out digits.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from trainperf import FULL, REFERENCE, TINY, Ladder, Metric, Optimization, Training

PATCH = 4
SIDE = 32


@dataclass(frozen=True)
class Size:
    width: int
    depth: int
    batch: int
    lr: float
    warmup: int
    iters: int


SIZES = {TINY: Size(32, 2, 64, 2e-3, 3, 20), FULL: Size(512, 8, 1024, 5e-4, 10, 50)}


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    """The 1,797 digits as 1 x 32 x 32 images in [0, 1] and their labels."""
    data = load_digits()
    images = torch.tensor(data.images, dtype=torch.float32).unsqueeze(1) / 16.0
    return F.interpolate(images, size=SIDE, mode="bilinear", align_corners=False), torch.tensor(data.target)


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, width: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))  # type: ignore[no-any-return]


class Mixer(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        tokens = (SIDE // PATCH) ** 2
        self.patches = nn.Conv2d(1, size.width, PATCH, stride=PATCH)
        self.blocks = nn.Sequential(*(MixerBlock(tokens, size.width) for _ in range(size.depth)))
        self.norm = nn.LayerNorm(size.width)
        self.head = nn.Linear(size.width, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patches(images).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))  # type: ignore[no-any-return]


def classification_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    images, labels = batch
    return F.cross_entropy(model(images), labels)


class MLPMixer:
    name = "mlp_mixer"
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.05, floor=0.5)

    def iterations(self, size: str) -> tuple[int, int]:
        return SIZES[size].warmup, SIZES[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = SIZES[size]
        images, labels = digits()
        held = torch.arange(len(labels)) % 5 == 0
        test_images, test_labels = images[held].to(device), labels[held].to(device)
        train_images, train_labels = images[~held], labels[~held]
        generator = torch.Generator().manual_seed(0)

        def batches() -> Iterator[tuple[torch.Tensor, ...]]:
            while True:
                rows = torch.randint(0, len(train_labels), (config.batch,), generator=generator)
                yield train_images[rows], train_labels[rows]

        def evaluate(model: nn.Module) -> float:
            return float((model(test_images).argmax(1) == test_labels).float().mean())

        torch.manual_seed(0)
        model = Mixer(config).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=config.lr),
            batches=batches(),
            loss=classification_loss,
            evaluate=evaluate,
            samples_per_iteration=config.batch,
            sample_unit="images",
        )


reference = Optimization(REFERENCE)  # fp32
tf32 = reference.but("tf32", tf32=True)
amp_bf16 = tf32.but("amp_bf16", amp_dtype="bfloat16")
compiled = amp_bf16.but("compile", compile=True)

LADDER = Ladder(MLPMixer(), [reference, tf32, amp_bf16, compiled])
