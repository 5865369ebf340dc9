"""pytest-trainperf: timed, accuracy-checked training optimization cases gated on per-device baselines.

The public API: what a test file of your own imports, and what a script reads of a run (``read_run``,
``baseline_file``, ``read_baselines``). The names load on first use, so that the pure
modules (statistics, checks, baselines, settings) import without torch. ``_EXPORTS`` says where each
one lives; the imports under ``TYPE_CHECKING`` give them their types.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainperf.hooks.fixture import TrainPerf
    from trainperf.measure.workers import usable_cores
    from trainperf.record.reading import baseline_file, read_baselines, read_run
    from trainperf.spec.case import Ladder
    from trainperf.spec.optimization import REFERENCE, Metric, Optimization
    from trainperf.spec.workload import FULL, TINY, Batch, Training, Workload, loader_settings, merge_options

__version__ = importlib.metadata.version("pytest-trainperf")

_EXPORTS = {
    "Optimization": "trainperf.spec.optimization",
    "Metric": "trainperf.spec.optimization",
    "REFERENCE": "trainperf.spec.optimization",
    "Ladder": "trainperf.spec.case",
    "Workload": "trainperf.spec.workload",
    "Training": "trainperf.spec.workload",
    "Batch": "trainperf.spec.workload",
    "TINY": "trainperf.spec.workload",
    "FULL": "trainperf.spec.workload",
    "merge_options": "trainperf.spec.workload",
    "loader_settings": "trainperf.spec.workload",
    "usable_cores": "trainperf.measure.workers",
    "TrainPerf": "trainperf.hooks.fixture",
    "read_run": "trainperf.record.reading",
    "baseline_file": "trainperf.record.reading",
    "read_baselines": "trainperf.record.reading",
}
__all__ = [  # spelled out for type checkers and linters; a test keeps it, the imports and _EXPORTS in step
    "FULL",
    "REFERENCE",
    "TINY",
    "Batch",
    "Ladder",
    "Metric",
    "Optimization",
    "TrainPerf",
    "Training",
    "Workload",
    "__version__",
    "baseline_file",
    "loader_settings",
    "merge_options",
    "read_baselines",
    "read_run",
    "usable_cores",
]

if not TYPE_CHECKING:  # a type checker reads the imports above: a misspelled name is an error there

    def __getattr__(name: str) -> Any:
        if name in _EXPORTS:
            return getattr(importlib.import_module(_EXPORTS[name]), name)
        raise AttributeError(f"module 'trainperf' has no attribute {name!r}")
