"""Helpers for the plugin's own tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    # Triton kernels run in Triton's interpreter here; Triton reads this when it is first imported, and
    # torch.distributed imports it, so it is set before any test module is collected
    os.environ.setdefault("TRITON_INTERPRET", "1")

TOY_SOURCE = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")

TOY_TEST = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

SLEEP_MS = {sleep_ms}
CASES = [
    Optimization("reference", options={{"sleep_ms": SLEEP_MS}}),
    Optimization("variant", options={{"sleep_ms": {variant_sleep_ms}, "shuffle_labels": {shuffle}}}),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.fixture
def toy_suite(pytester: pytest.Pytester):
    """Writes a toy perf suite into the pytester folder; returns a writer for its parameters."""
    pytester.makepyfile(toy_workload=TOY_SOURCE)

    def write(sleep_ms: float = 2.0, variant_sleep_ms: float = 2.0, shuffle: bool = False) -> pytest.Pytester:
        pytester.makepyfile(
            test_toy=TOY_TEST.format(sleep_ms=sleep_ms, variant_sleep_ms=variant_sleep_ms, shuffle=shuffle)
        )
        return pytester

    return write
