"""pytest-trainperf: timed, accuracy-checked training optimization cases gated on per-device baselines.

``from trainperf import Optimization, Workload, ...`` loads those lazily, so that the pure modules
(stats, gate, baselines, settings) import without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Optimization": "trainperf.case",
    "REFERENCE": "trainperf.case",
    "Ladder": "trainperf.case",
    "FULL": "trainperf.workload",
    "TINY": "trainperf.workload",
    "Metric": "trainperf.case",
    "Training": "trainperf.workload",
    "Workload": "trainperf.workload",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'trainperf' has no attribute {name!r}")
