"""The host's calls per iteration: counted alike run after run, more where the code does more, and the
gate fails a case whose host work grew where its time cannot tell (pytester, on the CPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from trainperf.measure import host_work

from tests.test_plugin import BASE, ONCE_SLOW, baseline_file


def batches(reader_calls: int = 0):
    while True:
        for _ in range(reader_calls):
            abs(0)
        yield [1.0, 2.0, 3.0], 0.0


def step(extra: int):
    def train(batch: list[float]) -> float:
        for _ in range(extra):
            abs(0)
        return sum(x * x for x in batch)

    return train


def test_the_same_step_counts_the_same_calls_and_more_work_more_calls() -> None:
    fetch = batches().__next__
    plain = host_work.calls_per_iteration(step(0), fetch)
    assert plain == host_work.calls_per_iteration(step(0), fetch)
    assert plain.total > plain.step > 0
    more = host_work.calls_per_iteration(step(100), fetch)
    assert (more.total, more.step) == (plain.total + 100, plain.step + 100)  # one C call each


def test_the_datas_fetch_counts_in_the_iteration_and_not_in_the_step() -> None:
    plain = host_work.calls_per_iteration(step(0), batches().__next__)
    reading = host_work.calls_per_iteration(step(0), batches(reader_calls=500).__next__)
    assert (reading.total, reading.step) == (plain.total + 500, plain.step)


def test_each_fetchs_calls_are_kept_where_they_differ_and_the_median_is_counted() -> None:
    def fetch(sizes):
        return lambda: next(batches(reader_calls=next(sizes)))

    varying = host_work.calls_per_iteration(step(0), fetch(iter([0, 400, 0])))
    plain = host_work.calls_per_iteration(step(0), fetch(iter([0, 0, 0])))
    assert varying.fetches == (plain.fetches[0], plain.fetches[0] + 400, plain.fetches[0])
    assert (varying.total, varying.step) == (plain.total, plain.step)


def test_a_loader_with_worker_processes_makes_fetches_of_different_calls() -> None:
    """Torch's cache of the storages worker processes share is swept of dead entries once it holds over
    128: the fetch that receives that storage does the sweep, so counts differ without any code changing."""
    torch = pytest.importorskip("torch")
    data = torch.utils.data.TensorDataset(torch.zeros(4096, 8), torch.zeros(4096))
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=1, prefetch_factor=2)
    fetch = iter(loader).__next__
    counted = host_work.calls_per_iteration(lambda batch: batch, lambda: (fetch(), 0.0), iterations=80)
    assert max(counted.fetches) > 2 * min(counted.fetches)  # 80 batches of two storages: a sweep at least
    assert counted.step == 1  # the step (a function that returns its batch) makes its one call


def test_counting_leaves_the_profile_function_as_it_found_it() -> None:
    def outer(*_: object) -> None: ...

    sys.setprofile(outer)
    try:
        host_work.calls_per_iteration(step(0), batches().__next__)
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(None)
    host_work.calls_per_iteration(step(0), batches().__next__)
    assert sys.getprofile() is None


def test_a_step_that_runs_a_compiled_function_is_counted() -> None:
    """The profile function runs inside compiled regions too (torchao's optimizers compile their step whole),
    where Dynamo compiles every Python function that starts: it calls none."""
    torch = pytest.importorskip("torch")
    compiled = torch.compile(lambda x: (x * 2).sum(), backend="eager", fullgraph=True)
    counted = host_work.calls_per_iteration(compiled, lambda: (torch.ones(3), 0.0))
    assert counted.step > 0 and counted == host_work.calls_per_iteration(compiled, lambda: (torch.ones(3), 0.0))


COUNT_AROUND_A_COMPILE = """
import torch
from trainperf.measure import host_work

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batch = torch.randn(4, 8)

def train(x):
    model(x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()

fetch = lambda: (batch, 0.0)
before = host_work.calls_per_iteration(train, fetch)
torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
print(before.step, host_work.calls_per_iteration(train, fetch).step)
"""


def test_an_eager_step_counts_the_same_calls_after_something_was_compiled_in_the_process() -> None:
    """torch.compile's plumbing, which an optimizer's step goes through by a longer path once the process
    compiled anything, is not counted: a fresh process (where nothing was compiled yet) counts as a test
    process that ran a compiled case before."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", COUNT_AROUND_A_COMPILE], capture_output=True, text=True, check=True)
    before, after = done.stdout.split()
    assert int(before) > 0 and before == after


@pytest.mark.slow
def test_a_case_making_more_calls_fails_on_its_host_work_with_both_counts(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", '{"sleep_ms": 10.0}'))
    pytester.runpytest(*BASE, "--update-baselines").assert_outcomes(passed=1)
    stored = json.loads(baseline_file(pytester).read_text())["cases"]["toy/reference"]
    assert len(stored["host_calls"]) == 3 and len(set(stored["host_calls"])) == 1  # three processes, one count
    assert len(set(stored["host_step_calls"])) == 1 and 0 < stored["host_step_calls"][0] < stored["host_calls"][0]
    same = pytester.runpytest(*BASE, "--perf-strict", "--perf-report=same")
    same.assert_outcomes(passed=1)
    case = json.loads((pytester.path / "same" / "run.json").read_text())["benchmarks"][0]["extra_info"]
    assert case["host_calls"] == stored["host_calls"][:1] and case["host_step_calls"] == stored["host_step_calls"][:1]
    assert len(case["host_fetch_calls"]) == host_work.COUNTED_ITERATIONS and len(set(case["host_fetch_calls"])) == 1
    assert case["min_detectable_host_work"] == pytest.approx(0.03)  # equal counts: the floor
    assert case["slowdown_caught_9_in_10"] > case["min_detectable_slowdown"]  # the threshold is caught half the time
    extra = -(-stored["host_calls"][0] // 5)  # 20% more calls, a few microseconds of time
    pytester.makepyfile(test_toy=ONCE_SLOW.replace("OPTIONS", f'{{"sleep_ms": 10.0, "extra_calls": {extra}}}'))
    more = pytester.runpytest(*BASE, "--perf-strict", "--junitxml=j.xml")
    more.assert_outcomes(failed=1)
    more.stdout.fnmatch_lines(
        ["*toy/reference: more host work than baseline: * host calls per iteration vs * stored (+2*%); "
         "noise 0.0% over 3 runs: more counts beyond 3.0%; * of them in the training step vs * stored (+*%); "
         "noise 0.0% over 3 runs: more counts beyond 3.0%; this run's GPU busy share was not measured*"]
    )  # fmt: skip
    # a busy host may slow the first measurement: its second then passes, and a note tells the first
    assert not [line for line in more.stdout.lines if "slower than baseline" in line and not line.startswith("note:")]
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="trainperf_min_detectable_host_work" value="0.03"' in junit
    assert 'name="trainperf_slowdown_caught_9_in_10" value="' in junit


@pytest.mark.slow
def test_a_rise_in_the_steps_calls_that_a_busy_reader_hides_in_the_total_fails(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    reader = '{"sleep_ms": 10.0, "reader_calls": 20000}'  # the iteration's calls are nearly all the reader's
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", reader))
    pytester.runpytest(*BASE, "--update-baselines").assert_outcomes(passed=1)
    stored = json.loads(baseline_file(pytester).read_text())["cases"]["toy/reference"]
    extra = stored["host_step_calls"][0] // 2  # the step's calls up by half, the iteration's by under 3%
    assert extra < 0.03 * stored["host_calls"][0]
    slowed = reader.replace("}", f', "extra_calls": {extra}}}')
    pytester.makepyfile(test_toy=ONCE_SLOW.replace("OPTIONS", slowed))
    more = pytester.runpytest(*BASE, "--perf-strict")
    more.assert_outcomes(failed=1)
    more.stdout.fnmatch_lines(
        ["*toy/reference: more host work than baseline: * host calls per iteration vs * stored (+*%); * "
         "of them in the training step vs * stored (+4*%); noise 0.0% over 3 runs: more counts beyond 3.0%*"]
    )  # fmt: skip
