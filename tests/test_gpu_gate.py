"""On a GPU: a digits case made slower by known extra GPU work fails against the stored baseline; a case
that runs out of CUDA memory fails alone and gives its memory back; a toy case short of its accuracy once is
measured again and passes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from toy_workload import Toy
from trainperf.measure import device as devices

ROOT = Path(__file__).resolve().parents[1]
CASE = "digits/amp_bf16"  # the steadiest case of the ladder on the H100 (IQR about 0.02 ms)

SLOWED_SUITE = """
import torch
from workloads.digits import Digits
from workloads.ladders.digits import amp_bf16

CYCLES = {cycles}


class SlowedDigits(Digits):
    def build(self, device, size, optimization):
        training = super().build(device, size, optimization)
        loss = training.loss

        def slowed(model, batch):
            torch.cuda._sleep(CYCLES)  # extra GPU work of known duration
            return loss(model, batch)

        training.loss = slowed
        return training


def test_slowed(trainperf):
    trainperf.run(SlowedDigits(), amp_bf16)
"""


def stored_median_ms() -> float:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: the slowed case adds GPU work")
    slug = devices.fingerprint(devices.choose_device("cuda")).slug
    path = ROOT / "baselines" / f"{slug}.json"
    if not path.exists():
        pytest.skip(f"no baseline file {path.name} for this GPU: run pytest perf_tests --update-baselines")
    return float(json.loads(path.read_text())["cases"][CASE]["summary"]["median"])


def test_case_made_slower_fails_the_gate(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    median_ms = stored_median_ms()
    cycles = int(0.3 * median_ms * 1e-3 * 1.98e9)  # about +30% at the boost clock, more at lower clocks
    monkeypatch.setenv("PYTHONPATH", str(ROOT), prepend=os.pathsep)
    pytester.makepyfile(test_slowed=SLOWED_SUITE.format(cycles=cycles))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--baseline-dir={ROOT / 'baselines'}")
    result.assert_outcomes(failed=1)
    slower = f"*{CASE}: slower than baseline: median * ms vs baseline * ms (+*%); noise *: a slowdown counts beyond *"
    result.stdout.fnmatch_lines([slower])


OUT_OF_MEMORY_SUITE = """
import torch
from workloads.digits import Digits
from workloads.ladders.digits import amp_bf16, reference


class HungryDigits(Digits):
    def build(self, device, size, optimization):
        training = super().build(device, size, optimization)
        loss, held = training.loss, torch.ones(2**30, device=device)  # 4 GiB the case holds while it runs
        steps = [0]

        def hungry(model, batch):
            steps[0] += 1
            if steps[0] == 3:
                torch.empty(2**40, dtype=torch.uint8, device=device)  # 1 TiB: a real CUDA out-of-memory
            return loss(model, batch) + 0 * held[0]

        training.loss = hungry
        return training


def test_a_hungry(trainperf):
    trainperf.run(HungryDigits(), amp_bf16)


def test_b_later_case_runs_with_the_memory_back(trainperf):
    assert torch.cuda.memory_allocated() < 2**29, torch.cuda.memory_allocated()  # the 4 GiB were freed
    trainperf.run(Digits(), reference)
"""


def test_out_of_memory_fails_its_case_alone_and_releases_its_memory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: the case runs out of CUDA memory")
    monkeypatch.setenv("PYTHONPATH", str(ROOT), prepend=os.pathsep)
    pytester.makepyfile(test_hungry=OUT_OF_MEMORY_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--baseline-dir=empty")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*digits/amp_bf16: ran out of cuda memory: CUDA out of memory. Tried to allocate*"])


ACCURACY_ONCE_SUITE = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [Optimization("reference"), Optimization("variant", options={"shuffle_once": "shuffle-once"})]


@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


def test_a_case_short_of_its_accuracy_once_is_measured_again_and_passes(pytester: pytest.Pytester) -> None:
    """A seeded training on a GPU is one draw of its metric: a failed accuracy is measured again in a fresh
    process before it stands (on the CPU it stands at once: test_plugin.py)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: only there is a failed accuracy measured again")
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=ACCURACY_ONCE_SUITE)
    (pytester.path / "shuffle-once").touch()  # the test process's build finds it, the fresh process's does not
    result = pytester.runpytest("-p", "no:cacheprovider", "--baseline-dir=empty", "--perf-report=out")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["note: toy/variant: not confirmed by a second measurement at the end of the session (*; "
         "the first: toy/variant: accuracy *"]
    )  # fmt: skip
    cases = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"]
    variant = next(case["extra_info"] for case in cases if case["name"] == "toy/variant")
    assert variant["confirmation"]["first"][0].startswith("toy/variant: accuracy ")
    assert variant["metric"]["value"] >= Toy.metric.floor  # the second measurement's accuracy is kept
