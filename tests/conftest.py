"""Helpers for the plugin's own tests."""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import torch

if not torch.cuda.is_available():
    # Triton kernels run in Triton's interpreter here; Triton reads this when it is first imported, and
    # torch.distributed imports it, so it is set before any test module is collected
    os.environ.setdefault("TRITON_INTERPRET", "1")

SLOW_LEFT_OUT = pytest.StashKey[int]()
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


# What a toy session imports. The sessions pytester runs in the test's process drop the modules they
# imported when they end, and torch's cannot be imported twice in one process: their operator libraries
# register once. Imported before a test's pytester, they stay.
def toy_test(cases: str) -> str:
    """A test file of toy cases: ``cases`` is the source of its list of Optimizations."""
    return TOY_CASES.replace("CASES_SOURCE", cases)


TOY_CASES = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = CASES_SOURCE

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


SESSION_IMPORTS = (
    "torch._dynamo",
    "torch._dynamo.repro.after_dynamo",  # torch.compile's backends, Inductor's caches: a compile's imports
    "torch._inductor",
    "torch._inductor.test_operators",
    "torch.utils.flop_counter",
    "torch.profiler",
    "torch.distributed",
    "torch.distributed.fsdp",
    "torch.distributed.tensor",
    "torch.onnx",
    "torch._numpy",
    "pandas",
    "scipy.special",
    "scipy.stats",
    "sympy",
    "matplotlib.pyplot",
)


@pytest.fixture(scope="session")
def _modules_a_session_imports() -> None:
    import trainperf

    for name in SESSION_IMPORTS:
        importlib.import_module(name)
    for module in pkgutil.walk_packages(trainperf.__path__, "trainperf."):
        importlib.import_module(module.name)


@pytest.fixture
def pytester(_modules_a_session_imports: None, pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester, its sessions run in the test's own process (``--runpytest=inprocess``): a session started
    there costs no Python, torch or pytest start; a test whose session must not share its process (an
    interrupt, a kill) calls ``runpytest_subprocess``."""
    return pytester


@pytest.fixture
def toy_suite(pytester: pytest.Pytester):
    """Writes a toy perf suite into the pytester folder; returns a writer for its parameters."""
    pytester.makepyfile(toy_workload=TOY_SOURCE)

    def write(sleep_ms: float = 10.0, variant_sleep_ms: float = 10.0, shuffle: bool = False) -> pytest.Pytester:
        pytester.makepyfile(
            test_toy=TOY_TEST.format(sleep_ms=sleep_ms, variant_sleep_ms=variant_sleep_ms, shuffle=shuffle)
        )
        return pytester

    return write


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``pytest tests -n 2`` each test runs in an xdist worker, whose PYTEST_XDIST_* variables the
    sessions a test starts (pytester, subprocesses) would inherit and take as their own: they would
    write ``run-gw0.json`` and leave the merge to a controller that does not exist."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow", action="store_true", help="also run the slow end-to-end sessions (marked slow; ci/check.sh does)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a slow end-to-end session, left out unless --run-slow is given")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --run-slow, the tests marked slow are deselected (and counted as such), not skipped."""
    if config.getoption("--run-slow"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        config.stash[SLOW_LEFT_OUT] = len(slow)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left_out = config.stash.get(SLOW_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(f"{left_out} slow end-to-end tests left out: --run-slow runs them (ci/check.sh)")
