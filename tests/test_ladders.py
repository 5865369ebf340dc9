"""The suite's ladders are found by their workload's name, and no two share one: a case's key in the
baselines is ``workload/optimization``."""

from __future__ import annotations

import pytest

from workloads.ladders import ddp, kernels, ladder_named, suite_ladders


def test_a_ladder_is_found_by_its_workload_name_not_its_module() -> None:
    assert ladder_named("gpt2_ddp") is ddp.LADDER
    assert ladder_named("matmul") is kernels.MATMULS


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="gpt2_ddp, gpt2_ddp_compiled"):
        ladder_named("gpt3")


def test_no_two_ladders_share_a_workload_name() -> None:
    names = [ladder.workload.name for ladder in suite_ladders()]
    assert len(names) >= 10
    assert len(set(names)) == len(names), f"workload names used twice: {names}"


def test_a_study_finds_a_case_of_the_suite_or_of_the_examples_by_its_baseline_key() -> None:
    from studies.study_cases import find_case

    ladder, optimization = find_case("gpt2_ddp/reference")
    assert ladder is ddp.LADDER and optimization is ddp.LADDER.reference
    assert find_case("mlp_mixer/tf32")[1].name == "tf32"
    with pytest.raises(KeyError, match="no case 'tf64' in gpt2's ladder; its cases are reference, "):
        find_case("gpt2/tf64")


@pytest.mark.parametrize(("case", "package"), [("hf_llama/compile", "transformers"), ("timm_resnet50/tf32", "timm")])
def test_a_study_finds_the_cases_of_the_examples_that_need_a_package(case: str, package: str) -> None:
    pytest.importorskip(package, reason=f"{package} is not installed: its example cannot be imported")
    from studies.study_cases import find_case

    ladder, optimization = find_case(case)
    assert f"{ladder.workload.name}/{optimization.name}" == case
