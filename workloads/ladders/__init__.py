"""The suite's ladders: each workload's reference and the optimizations it is measured against."""

from __future__ import annotations

import importlib
import pkgutil

from trainperf import Ladder


def suite_ladders() -> list[Ladder]:
    """Every ladder defined in this package's modules, in module order."""
    modules = [importlib.import_module(f"{__name__}.{module.name}") for module in pkgutil.iter_modules(__path__)]
    found = [value for module in modules for value in vars(module).values() if isinstance(value, Ladder)]
    return list({id(ladder): ladder for ladder in found}.values())  # a ladder imported elsewhere counts once


def ladder_named(workload: str) -> Ladder:
    """The suite's ladder whose workload is called ``workload`` (``gpt2_ddp``'s is in ``ddp.py``)."""
    names = {ladder.workload.name: ladder for ladder in suite_ladders()}
    if workload not in names:
        raise KeyError(f"no ladder of a workload called {workload!r}; the suite's are {', '.join(sorted(names))}")
    return names[workload]
