"""The suite's compiled cases with custom layers compile into graphs that the AOTAutograd cache keeps, so
that a fresh process (a profiling child, a fresh-process measurement, the next night) compiles them from
the cache. Checked with the cache's own test on each Dynamo graph of GPT-2's tiny ``stack`` step, its
loss in PyTorch's cross-entropy: Dynamo cannot trace the Triton kernel's interpreter, which stands in for
the GPU here. The cache's module is imported inside the tests: it imports Dynamo, a second of CPU in
every xdist worker that merely collects this file."""

from __future__ import annotations

import pytest
import torch
from trainperf import TINY

from workloads.gpt2 import GPT2
from workloads.ladders.gpt2 import stack

STACK_ON_THE_CPU = stack.but("stack", options={**stack.options, "cross_entropy": "torch"})


def dynamo_graphs_of_a_step() -> list[torch.fx.GraphModule]:
    """The Dynamo graphs of one compiled forward and backward of the stack's loss, under bf16 autocast."""
    graphs: list[torch.fx.GraphModule] = []

    def capture(graph: torch.fx.GraphModule, example_inputs: object) -> object:
        graphs.append(graph)
        return graph.forward

    training = GPT2().build(torch.device("cpu"), TINY, STACK_ON_THE_CPU)
    inputs, targets = next(iter(training.batches))
    torch._dynamo.reset()
    loss_of = torch.compile(training.loss, backend=capture)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = loss_of(training.model, (inputs[:2, :16], targets[:2, :16]))
    loss.backward()
    torch._dynamo.reset()
    return graphs


def test_the_stacks_graphs_are_kept_by_the_aot_autograd_cache() -> None:
    from torch._functorch._aot_autograd.autograd_cache import check_cacheable

    graphs = dynamo_graphs_of_a_step()
    assert graphs, "nothing was compiled"
    for graph in graphs:
        check_cacheable(graph)  # raises BypassAOTAutogradCache naming what the cache refuses


def test_without_the_suites_setting_the_cache_refuses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The setting in the suite's conftest.py is what makes them cacheable: the autograd Functions."""
    from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache, check_cacheable

    monkeypatch.setattr(torch._functorch.config, "autograd_cache_allow_custom_autograd_functions", False)
    with pytest.raises(BypassAOTAutogradCache):
        for graph in dynamo_graphs_of_a_step():
            check_cacheable(graph)
