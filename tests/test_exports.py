"""``trainperf export``: a real H100 run's figures in github-action-benchmark's and Bencher's formats,
checked against the fields those formats document."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from trainperf.cli.main import main
from trainperf.record import document
from trainperf.report import exports

H100_RUN = Path(__file__).parent / "data" / "h100_gpt2_ncu.run.json"
H200_ADAPTERS_RUN = Path(__file__).parent / "data" / "h200_adapters.run.json"  # this version, two sample units
CPU_EXAMPLES_RUN = Path(__file__).parent / "data" / "cpu_examples.run.json"  # with the slowdown caught 9 in 10
# Bencher Metric Format's JSON Schema, as bencher.dev/bmf.json publishes it
BMF_SCHEMA = {
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                    "required": ["value"],
                }
            },
        }
    },
}
# github-action-benchmark's custom tools: a list of {name, unit, value} with optional range and extra
CUSTOM_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "unit": {"type": "string"},
            "value": {"type": "number"},
            "range": {"type": "string"},
            "extra": {"type": "string"},
        },
        "required": ["name", "unit", "value"],
        "additionalProperties": False,
    },
}


@pytest.fixture
def cases() -> list[dict]:
    return document.load(H100_RUN).cases


def test_bencher_export_is_bmf_with_latency_in_ns_and_the_gpu_figures(cases: list[dict]) -> None:
    bmf = exports.bencher(cases)
    jsonschema.validate(bmf, BMF_SCHEMA)
    first = cases[0]
    measures = bmf[first["name"]]
    assert measures["latency"]["value"] == pytest.approx(first["extra_info"]["summary_ms"]["median"] * 1e6)
    assert measures["latency"]["lower_value"] <= measures["latency"]["value"] <= measures["latency"]["upper_value"]
    assert measures["throughput"]["value"] == pytest.approx(first["extra_info"]["samples_per_second"])
    assert measures["mfu"]["value"] == pytest.approx(100 * first["extra_info"]["mfu"])
    assert measures["peak-memory"]["value"] == pytest.approx(first["extra_info"]["peak_memory_bytes"] / 2**20)
    assert set(bmf) == {case["name"] for case in cases}


def test_github_action_benchmark_export_splits_smaller_and_bigger_is_better(cases: list[dict]) -> None:
    smaller, bigger = exports.github_action_benchmark(cases)
    jsonschema.validate(smaller, CUSTOM_SCHEMA)
    jsonschema.validate(bigger, CUSTOM_SCHEMA)
    assert len({entry["name"] for entry in smaller + bigger}) == len(smaller + bigger)  # one series each
    assert {entry["unit"] for entry in smaller} == {"ms", "MiB"}
    assert {entry["unit"] for entry in bigger} == {"tokens/s", "%"}
    first = next(entry for entry in smaller if entry["unit"] == "ms")
    assert first["value"] == pytest.approx(cases[0]["extra_info"]["summary_ms"]["median"])
    assert "verdict: " in first["extra"] and "threshold: " not in first["extra"]  # this run predates thresholds


def test_the_export_command_writes_the_files_and_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(H100_RUN), "--format", "github-action-benchmark", "-o", str(tmp_path)]) == 0
    assert main(["export", str(H100_RUN), "--format", "bencher", "-o", str(tmp_path)]) == 0
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == [exports.BENCHER_FILE, exports.BIGGER_FILE, exports.SMALLER_FILE]
    assert capsys.readouterr().out.count("trainperf: wrote ") == 3
    jsonschema.validate(json.loads((tmp_path / exports.BENCHER_FILE).read_text()), BMF_SCHEMA)
    with pytest.raises(SystemExit) as unknown:
        main(["export", str(H100_RUN), "--format", "csv", "-o", str(tmp_path)])
    assert unknown.value.code == 2


def test_a_run_of_this_version_exports_each_unit_and_what_each_case_detects() -> None:
    cases = document.load(H200_ADAPTERS_RUN).cases
    smaller, bigger = exports.github_action_benchmark(cases)
    jsonschema.validate(smaller + bigger, CUSTOM_SCHEMA)
    jsonschema.validate(exports.bencher(cases), BMF_SCHEMA)
    assert {entry["unit"] for entry in bigger} == {"images/s", "tokens/s", "%"}
    assert all("threshold: " in entry["extra"] for entry in smaller if entry["unit"] == "ms")


def test_each_tooltip_gives_the_slowdown_caught_nine_times_in_ten_beside_the_threshold() -> None:
    cases = document.load(CPU_EXAMPLES_RUN).cases
    smaller, _ = exports.github_action_benchmark(cases)
    times = [entry for entry in smaller if entry["unit"] == "ms"]
    assert times and all("threshold: " in e["extra"] and "caught 9/10: " in e["extra"] for e in times)


def test_the_exported_range_is_the_summarys_plus_or_minus() -> None:
    """The summary's "ms/iter (± IQR)" shows the whole IQR after "±"; the export showed half of it."""
    from trainperf.record.document import cases_frame
    from trainperf.report.tables import display_cases

    cases = json.loads(CPU_EXAMPLES_RUN.read_text())["benchmarks"]
    smaller, _ = exports.github_action_benchmark(cases)
    shown = display_cases(cases_frame(cases))["ms/iter (± IQR)"]
    ranges = [entry["range"] for entry in smaller if entry["unit"] == "ms"]
    assert [text.split(" ± ")[1] for text in shown] == [text.removeprefix("± ") for text in ranges]
