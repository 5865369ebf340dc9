"""A ResNet-50-style image classifier (bottleneck blocks, batch norm) on the JPEG corpus of
``workloads/images.py``: the vision workload whose data path (decode and augment on the CPU) matters.

Options: ``batch_scale`` (batch size multiple), ``uint8_transfer`` (the loader hands uint8 images to
the GPU, which converts and normalizes them: a quarter of the bytes to copy and no float work on the CPU)
and ``gpu_decode`` (the loader hands over the JPEG bytes, which the device decodes and augments:
``workloads/gpu_decode.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from trainperf import FULL, TINY, Batch, Metric, Optimization, Training, merge_options

from workloads import images
from workloads.gpu_decode import DecodedBatches
from workloads.sampling import endless_loader

OPTIONS = {"batch_scale": 1, "uint8_transfer": False, "gpu_decode": False}
CALIBRATION_IMAGES = 256  # training images whose batch-norm statistics the evaluation uses


@dataclass(frozen=True)
class ResNetConfig:
    blocks: tuple[int, int, int, int]  # bottleneck blocks per stage
    width: int  # channels of the stem; stage s has width * 2**s inner and 4x that outer channels
    side: int  # training image side
    stored_side: int  # side of the corpus JPEGs
    corpus: int  # JPEGs in the corpus (every 5th held out)
    batch_size: int
    lr: float
    warmup: int
    iters: int


CONFIGS = {
    TINY: ResNetConfig((1, 1, 1, 1), 8, 32, 40, 320, 32, 3e-3, 10, 50),
    FULL: ResNetConfig((3, 4, 6, 3), 64, 224, 256, 1280, 128, 1e-3, 5, 20),
}


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (with the stride), 1x1 expand, each with batch norm; projection shortcut when
    the shape changes."""

    def __init__(self, inputs: int, inner: int, stride: int) -> None:
        super().__init__()
        outputs = 4 * inner
        self.body = nn.Sequential(
            nn.Conv2d(inputs, inner, 1, bias=False),
            nn.BatchNorm2d(inner),
            nn.ReLU(inplace=True),
            nn.Conv2d(inner, inner, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(inner),
            nn.ReLU(inplace=True),
            nn.Conv2d(inner, outputs, 1, bias=False),
            nn.BatchNorm2d(outputs),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, blocks: tuple[int, int, int, int], width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        inputs = width
        for stage, count in enumerate(blocks):
            inner = width * 2**stage
            for block in range(count):
                stages.append(Bottleneck(inputs, inner, 2 if block == 0 and stage > 0 else 1))
                inputs = 4 * inner
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(inputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))
        return logits


class Vision:
    """Image classification: accuracy on the held-out JPEGs (12 classes, 1/12 by chance).

    25 steps from scratch leave batch norm's running averages mixed with the statistics of early weights,
    and the accuracy measured through them swung between runs of the same code (research/evidence/
    h200-suite-strict-runs.md): the evaluation first recomputes them for the final weights
    (``recalibrate_batch_norm``). Every case must also at least double the untrained model's accuracy.

    The tolerance is the training's measured spread, not a choice: a case may fall short of the reference
    of its run by as much as two runs of the same code differ one time in a thousand (3.09 standard
    deviations of a difference of two runs, from the seeds of ``research/studies/batch_norm_spread.py --full``;
    research/evidence/h200-suite-strict-runs.md).
    """

    name = "resnet"
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.38, min_gain=1.0)

    def iterations(self, size: str) -> tuple[int, int]:
        config = CONFIGS[size]
        return config.warmup, config.iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = CONFIGS[size]
        options = merge_options(OPTIONS, optimization.options, optimization.name)
        gpu_decode = bool(options["gpu_decode"])
        uint8 = bool(options["uint8_transfer"]) and not gpu_decode  # decoded batches come normalized
        train, train_labels, test, test_labels = images.split(config.corpus, config.stored_side)
        batch_size = config.batch_size * int(options["batch_scale"])
        if gpu_decode:
            jpegs = images.JpegBytes(train, train_labels, config.stored_side)
            undecoded = endless_loader(jpegs, batch_size, optimization, device, collate_fn=images.collate_jpegs)
            loader: Iterable[Batch] = DecodedBatches(undecoded, device, config.side, optimization.channels_last)
        else:
            dataset = images.JpegImages(train, train_labels, config.side, uint8=uint8)
            loader = endless_loader(dataset, batch_size, optimization, device)
        model = ResNet(config.blocks, config.width, images.CLASSES).to(device)
        held_out = images.held_out_tensor(test, config.side).to(device)
        if optimization.channels_last:
            held_out = held_out.contiguous(memory_format=torch.channels_last)
        labels = torch.tensor(test_labels, device=device)
        calibration = images.held_out_tensor(train[:CALIBRATION_IMAGES], config.side)  # on the host until used

        def loss(trained: nn.Module, batch: Batch) -> torch.Tensor:
            pixels, targets = batch
            if uint8:  # converted and normalized here, on the GPU
                pixels = images.normalize(pixels)
                if optimization.channels_last:
                    pixels = pixels.contiguous(memory_format=torch.channels_last)
            value: torch.Tensor = F.cross_entropy(trained(pixels), targets)
            return value

        def evaluate(trained: nn.Module) -> float:
            recalibrate_batch_norm(trained, calibration, config.batch_size, optimization.channels_last)
            predictions = torch.cat([trained(chunk).argmax(1) for chunk in held_out.split(config.batch_size)])
            return (predictions == labels).float().mean().item()

        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=config.lr),
            batches=loader,
            loss=loss,
            evaluate=evaluate,
            samples_per_iteration=batch_size,
            sample_unit="images",
        )


def recalibrate_batch_norm(model: nn.Module, pixels: torch.Tensor, batch_size: int, channels_last: bool) -> None:
    """Batch norm's running statistics recomputed for the model's current weights: reset, then a
    cumulative average over ``pixels`` in training mode (call under ``torch.no_grad``). A compiled model
    is recalibrated through its uncompiled modules, which hold the same buffers: no graph to compile."""
    eager = getattr(model, "_orig_mod", model)
    norms = [m for m in eager.modules() if isinstance(m, nn.BatchNorm2d)]
    momenta = [m.momentum for m in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches that follow
    was_training = eager.training
    eager.train()
    device = next(eager.parameters()).device
    try:
        for chunk in pixels.split(batch_size):
            chunk = chunk.to(device)
            eager(chunk.contiguous(memory_format=torch.channels_last) if channels_last else chunk)
    finally:
        eager.train(was_training)
        for norm, momentum in zip(norms, momenta, strict=True):
            norm.momentum = momentum
