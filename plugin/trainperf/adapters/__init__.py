"""Workloads made from the models people train most, so that a ladder over one is a few lines:
``from_timm("resnet50")`` and ``from_transformers(LlamaConfig(...))`` build the model from its name or
config (no weights are downloaded) and train it on synthetic but learnable data with a held-out metric.

May import ``spec``.
"""

from __future__ import annotations

from trainperf.adapters.size import Size
from trainperf.adapters.timm_models import from_timm
from trainperf.adapters.transformers_models import from_transformers

__all__ = ["Size", "from_timm", "from_transformers"]
