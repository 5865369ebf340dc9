"""A finished case leaves nothing in its process: torch.compile's code and CUDA graph trees are reset and
the CUDA cache is emptied once the case's model, optimizer and batches are gone, so a fresh process that
measures the case next has the whole GPU (research/evidence/h100-suite-baselines.md)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from trainperf.measure import runner
from trainperf.spec.case import CaseSpec
from trainperf.spec.optimization import Optimization

from tests.toy_workload import Toy


def test_the_cache_is_emptied_after_the_cases_model_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    models: list[weakref.ref[torch.nn.Module]] = []
    alive_at_release: list[bool] = []
    prepare_model = runner.prepare_model

    def prepare_and_watch(*args: object) -> torch.nn.Module:
        model = prepare_model(*args)  # type: ignore[arg-type]
        models.append(weakref.ref(model))
        return model

    def release(device: torch.device) -> None:
        gc.collect()  # as the runner's own release does before emptying the cache
        alive_at_release.append(models[0]() is not None)

    monkeypatch.setattr(runner, "prepare_model", prepare_and_watch)
    monkeypatch.setattr(runner, "free_memory", release)
    runner.run_case(CaseSpec(Toy(), Optimization("reference"), torch.device("cpu"), "tiny", 2, 5))
    assert alive_at_release == [False]


def test_a_case_that_raises_still_empties_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[torch.device] = []
    monkeypatch.setattr(runner, "free_memory", released.append)
    spec = CaseSpec(Toy(), Optimization("broken", options={"raise_in": "step"}), torch.device("cpu"), "tiny", 2, 5)
    with pytest.raises(ValueError):
        runner.run_case(spec)
    assert released == [torch.device("cpu")]


def test_releasing_resets_what_torch_compile_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled code and CUDA graph trees keep a compiled case's model and memory pool alive until reset."""
    import torch._dynamo
    import torch._inductor.cudagraph_trees

    resets: list[str] = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append("compiled code"))
    monkeypatch.setattr(torch._inductor.cudagraph_trees, "reset_cudagraph_trees", lambda: resets.append("graphs"))
    runner.free_memory(torch.device("cpu"))
    assert resets == ["compiled code", "graphs"]
