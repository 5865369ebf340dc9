"""run.json is a pytest-benchmark document: ``pytest-benchmark compare`` reads a run the suite wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl", "--perf-report=out")
H200_ADAPTERS_RUN = Path(__file__).parent / "data" / "h200_adapters.run.json"  # a GPU run of this version
GROUP_BY = ["group", "name", "fullname", "func", "fullfunc", "param", "param:optimization"]


@pytest.fixture
def run_document(toy_suite) -> Path:
    pytester = toy_suite()
    pytester.runpytest(*BASE).assert_outcomes(passed=2)
    return pytester.path / "out" / "run.json"


# ``pytest-benchmark compare`` once a grouping, all in one process: a process each pays the imports again
GROUPING_MARK = "@@ group-by "
COMPARE_EACH_GROUPING = f"""
import sys
from pytest_benchmark.cli import main
document = sys.argv[1]
for group_by in sys.argv[2:]:
    sys.argv = ["pytest-benchmark", "compare", f"--group-by={{group_by}}", document]
    print("{GROUPING_MARK}" + group_by, flush=True)
    main()
"""


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from pytest_benchmark.cli import main; main()", "compare", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _compare_grouped_every_way(document: Path) -> dict[str, str]:
    """Each grouping's table, as ``pytest-benchmark compare --group-by`` prints it."""
    command = [sys.executable, "-c", COMPARE_EACH_GROUPING, str(document), *GROUP_BY]
    # in the document's folder, which has no conftest.py: the compare imports the one of its folder, and a
    # second import of it in the same process fails
    done = subprocess.run(command, cwd=document.parent, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    tables = dict(part.split("\n", 1) for part in done.stdout.split(GROUPING_MARK)[1:])
    assert list(tables) == GROUP_BY, done.stdout[-2000:]
    return tables


def test_the_run_document_carries_pytest_benchmarks_fields(run_document: Path) -> None:
    from pytest_benchmark import __version__ as pytest_benchmark_version
    from trainperf import __version__

    data = json.loads(run_document.read_text())
    assert data["version"] == pytest_benchmark_version and data["trainperf_version"] == __version__
    for case in data["benchmarks"]:
        assert {"group", "name", "fullname", "params", "param", "options", "extra_info", "stats"} <= set(case)
        assert case["param"] == case["params"]["optimization"] and case["stats"]["iterations"] == 1
    settings = data["settings"]
    assert settings["values"]["device"] == "cpu" and settings["sources"]["device"] == "command line --perf-device"
    assert settings["values"]["profile"] == "off" and set(settings["values"]) == set(settings["sources"])


@pytest.mark.slow
def test_pytest_benchmark_compare_reads_the_run_document_grouped_every_way(run_document: Path) -> None:
    for group_by, table in _compare_grouped_every_way(run_document).items():
        assert "Min" in table and "Median" in table and "Rounds" in table, group_by
        assert "toy/reference" in table and "toy/variant" in table, group_by


def test_pytest_benchmark_compare_reads_a_gpu_run_grouped_every_way() -> None:
    for group_by, table in _compare_grouped_every_way(H200_ADAPTERS_RUN).items():
        assert "timm_resnet50/compile" in table and "hf_llama/reference" in table, group_by


def test_pytest_benchmark_compare_draws_its_histogram_where_pygal_is_installed(run_document: Path) -> None:
    pytest.importorskip("pygal", reason="pytest-benchmark's --histogram needs pygal, not installed here")
    done = _compare(f"--histogram={run_document.parent / 'hist'}", str(run_document))
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(run_document.parent.glob("hist*.svg"))


BENCHMARKED = """
def test_sum(benchmark):
    benchmark(sum, range(100))
"""


@pytest.mark.slow
def test_benchmark_json_carries_the_trainperf_cases_beside_its_own(toy_suite) -> None:
    pytester = toy_suite()
    pytester.makepyfile(test_bench=BENCHMARKED)
    pytester.runpytest(*BASE, "--benchmark-json=bench.json").assert_outcomes(passed=3)
    names = [case["name"] for case in json.loads((pytester.path / "bench.json").read_text())["benchmarks"]]
    assert sorted(names) == ["test_sum", "toy/reference", "toy/variant"]
