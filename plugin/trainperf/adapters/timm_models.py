"""A timm image model as a workload: classify synthetic pattern images (``synthetic.PatternImages``).

The model is built by name with random weights; its input side is the size's ``length`` or the model's
own default. Metric: accuracy on held-out images drawn from the same patterns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainperf.adapters.size import Size, missing_package, workload_name
from trainperf.adapters.synthetic import PatternImages
from trainperf.spec.optimization import Metric, Optimization
from trainperf.spec.workload import FULL, TINY, Batch, Training

HELD_OUT_IMAGES = 512
FULL_RUN = Size(batch=128)  # at the model's own input side
TINY_RUN = Size(batch=8, length=32, warmup=2, iters=10)


def from_timm(
    model: str,
    *,
    name: str | None = None,
    classes: int = 10,
    full: Size = FULL_RUN,
    tiny: Size = TINY_RUN,
    tiny_model: str | None = None,
    **model_kwargs: Any,
) -> TimmClassifier:
    """A workload that trains timm's ``model`` (e.g. "resnet50", "vit_small_patch16_224") to tell
    ``classes`` pattern classes apart; ``tiny_model`` replaces it at the tiny size, ``model_kwargs`` go to
    ``timm.create_model``. The workload is named ``timm_<model>`` unless ``name`` is given."""
    return TimmClassifier(
        model, name or workload_name("timm", model), classes, {FULL: full, TINY: tiny}, tiny_model, model_kwargs
    )


def classification_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    images, labels = batch
    return F.cross_entropy(model(images), labels)


class TimmClassifier:
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.05, min_gain=1.0)  # twice the untrained

    def __init__(
        self,
        model: str,
        name: str,
        classes: int,
        sizes: Mapping[str, Size],
        tiny_model: str | None,
        model_kwargs: Mapping[str, Any],
    ) -> None:
        self.model, self.name, self.classes, self.sizes = model, name, classes, sizes
        self.tiny_model, self.model_kwargs = tiny_model, model_kwargs

    def iterations(self, size: str) -> tuple[int, int]:
        return self.sizes[size].warmup, self.sizes[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        run = self.sizes[size]
        torch.manual_seed(0)
        model, side = self.create(self.tiny_model if size == TINY and self.tiny_model else self.model, run.length)
        images = PatternImages(self.classes, side, device)
        held_images, held_labels = images.held_out(HELD_OUT_IMAGES)

        def evaluate(model: nn.Module) -> float:
            chunks = zip(held_images.split(run.batch), held_labels.split(run.batch), strict=True)
            right = sum(int((model(chunk).argmax(1) == labels).sum()) for chunk, labels in chunks)
            return right / len(held_labels)

        model = model.to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=run.lr),
            batches=images.batches(run.batch),
            loss=classification_loss,
            evaluate=evaluate,
            samples_per_iteration=run.batch,
            sample_unit="images",
        )

    def create(self, name: str, side: int | None) -> tuple[nn.Module, int]:
        """The model with random weights and the image side it takes. A model with a fixed input size (a
        vision transformer) is built again for another side; a convolutional one takes any side."""
        try:
            import timm
        except Exception as error:  # not installed, or its import failed
            raise missing_package("timm", "trainperf.adapters.from_timm", error) from error
        kwargs = {**self.model_kwargs, "pretrained": False, "num_classes": self.classes}
        model = timm.create_model(name, **kwargs)
        default_side = int(model.pretrained_cfg["input_size"][-1])
        if side is None or side == default_side:
            return model, default_side
        if model.pretrained_cfg.get("fixed_input_size"):
            model = timm.create_model(name, img_size=side, **kwargs)
        return model, side
