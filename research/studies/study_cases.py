"""A study's case, named as in the baselines (``workload/optimization``): found among the suite's ladders
(``workloads.ladders``) or the example workloads users bring (``examples/``)."""

from __future__ import annotations

import importlib

from trainperf import Ladder, Optimization

from workloads.ladders import ladder_named

EXAMPLES = {  # by workload name; a module is imported only for its own cases (transformers, timm)
    "lstm_lm": "examples.lstm_language_model",
    "mlp_mixer": "examples.mlp_mixer",
    "hf_llama": "examples.hf_llama",
    "timm_resnet50": "examples.timm_resnet",
    "my_regression": "examples.test_my_model",
}


def find_case(case: str) -> tuple[Ladder, Optimization]:
    """The ladder holding ``case`` and the case's optimization; a KeyError names the known ones."""
    workload, _, name = case.partition("/")
    example = EXAMPLES.get(workload)
    ladder = importlib.import_module(example).LADDER if example else ladder_named(workload)
    for optimization in ladder.cases:
        if optimization.name == name:
            return ladder, optimization
    known = ", ".join(optimization.name for optimization in ladder.cases)
    raise KeyError(f"no case {name!r} in {workload}'s ladder; its cases are {known}")
