"""research/studies/study_cases.py finds a case of the suite or of the examples by its baseline key."""

from __future__ import annotations

import pytest

from research.studies.study_cases import find_case
from workloads.ladders import ddp


def test_a_study_finds_a_case_of_the_suite_or_of_the_examples_by_its_baseline_key() -> None:
    ladder, optimization = find_case("gpt2_ddp/reference")
    assert ladder is ddp.LADDER and optimization is ddp.LADDER.reference
    assert find_case("mlp_mixer/tf32")[1].name == "tf32"
    with pytest.raises(KeyError, match="no case 'tf64' in gpt2's ladder; its cases are reference, "):
        find_case("gpt2/tf64")


@pytest.mark.parametrize(("case", "package"), [("hf_llama/compile", "transformers"), ("timm_resnet50/tf32", "timm")])
def test_a_study_finds_the_cases_of_the_examples_that_need_a_package(case: str, package: str) -> None:
    pytest.importorskip(package, reason=f"{package} is not installed: its example cannot be imported")
    ladder, optimization = find_case(case)
    assert f"{ladder.workload.name}/{optimization.name}" == case
