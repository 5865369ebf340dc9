"""The run document (``run.json``): the one record of a run's cases that every report reads.

Written once per run (``run_document``) in pytest-benchmark's layout where it fits (``machine_info``,
``commit_info``, ``benchmarks`` with ``stats`` in seconds), trainperf's figures, checks, profile and
communication in each case's ``extra_info``; read back (``load``), merged and tabulated for the terminal,
JUnit, HTML and Markdown. Several runs' documents merge: a case keeps its latest measurement on its device.
"""

from __future__ import annotations

import datetime
import functools
import importlib.metadata
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_benchmark import __version__ as pytest_benchmark_version
from pytest_benchmark.stats import Stats

from trainperf.judge import host_work_check, stats
from trainperf.judge.checks import Check
from trainperf.judge.verdict import Verdict
from trainperf.record import profile_summary
from trainperf.record.result import CaseEntry, CaseResult
from trainperf.store.provenance import commit_info

if TYPE_CHECKING:
    import pandas as pd

    from trainperf.record.session import PerfSession


RECORDED = "recorded_baselines"  # the run document's key of the baseline entries it recorded


def case_entry(result: CaseResult) -> CaseEntry:
    """The case as the run document records it."""
    seconds = Stats()
    for sample in result.measurement.samples_ms:
        seconds.update(sample / 1000.0)
    m = result.measurement
    return {
        "group": result.workload,
        "name": result.key,
        "fullname": result.nodeid,
        "params": {"optimization": result.optimization},
        "param": result.optimization,
        "options": {"warmup": m.warmup, "iters": m.iters},  # a round is one training iteration
        "stats": {**seconds.as_dict(), "data": [x / 1000.0 for x in m.samples_ms], "iterations": 1},
        "extra_info": {
            "knobs": result.knobs,
            "summary_ms": result.summary.as_dict(),
            "reader_ms": m.reader_ms,
            "reader_share": result.reader_share,
            "losses": m.losses,
            "metric": {"name": result.metric_name, "value": m.metric, "initial": m.initial_metric},
            "speedup": result.speedup,
            "baseline_median_ms": result.baseline_median_ms,
            "min_detectable_slowdown": result.detection.slowdown,
            "slowdown_caught_9_in_10": result.detection.slowdown_9_in_10,
            "min_detectable_host_work": result.detection.host_work,
            "min_detectable_kernel_time": result.detection.kernel_time,
            "run_medians_ms": m.run_medians_ms or [result.summary.median],
            "host_calls": m.host_calls,
            "host_step_calls": m.host_step_calls,
            "host_fetch_calls": m.host_fetch_calls,
            "work": m.work,
            "confirmation": result.confirmation,
            "baseline_summary_ms": None if result.baseline_summary is None else result.baseline_summary.as_dict(),
            "samples_per_iteration": m.samples_per_iteration,
            "samples_per_second": result.samples_per_second,
            "sample_unit": m.sample_unit,
            "flops_per_iteration": m.flops_per_iteration,
            "achieved_flops": result.achieved_flops,
            "mfu": result.mfu,
            "fp8_flop_share": m.fp8_flop_share,
            "peak_memory_bytes": m.peak_memory_bytes,
            "warmup_s": m.warmup_s,
            "first_step_s": m.first_step_s,
            "phase_s": m.phase_s,
            "iters": m.iters,
            "warmup": m.warmup,
            "clocks": m.clocks,
            "communication": m.communication,
            "scaling": result.scaling,
            "memory_snapshot": m.memory_snapshot,
            "checks": [check_record(c) for c in result.checks],
            "verdict": str(result.verdict),
            "reader_ms_median": stats.summarize(m.reader_ms).median,
            "profile": None if result.profile is None else profile_summary.record(result.profile),
        },
    }


def check_record(check: Check) -> dict[str, Any]:
    """A check as run.json keeps it: its name, outcome and message, and whether its time awaits calibration."""
    record: dict[str, Any] = {"name": check.name, "passed": check.passed, "message": check.message}
    if check.awaits_calibration:
        record["awaits_calibration"] = True
    return record


def run_document(session: PerfSession) -> dict[str, Any]:
    return {
        "version": pytest_benchmark_version,  # the format's writer, as pytest-benchmark's own files say
        "trainperf_version": importlib.metadata.version("pytest-trainperf"),
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine_info": session.fingerprint.as_dict(),
        "version_changes": session.version_lines(),
        "commit_info": commit_info(),
        "settings": {
            "size": session.size,
            "device": str(session.device),
            "values": session.settings.values(),
            "sources": dict(session.settings.sources),
        },
        "benchmarks": list(session.entries),
        "unfinished": list(session.unfinished),
        "notes": session.notes,
        "finished": True,
        **recorded_baselines(session),
    }


def recorded_baselines(session: PerfSession) -> dict[str, Any]:
    """Under --update-baselines, the baseline entry of each case recorded, as the device's file takes
    it: a write that failed (a full disk, a bad path) loses nothing, ``trainperf record`` writes them."""
    if not (session.settings.update_baselines and session.pending):
        return {}
    return {RECORDED: {"device": session.fingerprint.slug, "cases": dict(session.pending)}}


class RunDocumentError(ValueError):
    """A file that is not a usable run document; the message names it and what is wrong."""


@dataclass(frozen=True)
class RunDocument:
    path: Path
    data: dict[str, Any]

    @property
    def cases(self) -> list[dict[str, Any]]:
        return list(self.data["benchmarks"])

    @property
    def machine(self) -> dict[str, Any]:
        return dict(self.data.get("machine_info") or {})

    @property
    def culprits(self) -> list[dict[str, Any]]:
        """The nightly's bisection of its cases that failed on their work (``trainperf bisect --run``)."""
        return list(self.data.get("culprits") or [])

    @property
    def version_changes(self) -> list[str]:
        """What changed since the recording of its cases (torch, CUDA, cuDNN, driver, board), one line each."""
        return list(self.data.get("version_changes") or [])

    @property
    def unfinished(self) -> list[dict[str, str]]:
        """Cases that started and did not finish: name, fullname, verdict, reason."""
        return [{**case, "verdict": str(Verdict.read(case["verdict"]))} for case in self.data.get("unfinished", [])]


def load(path: Path) -> RunDocument:
    """Read one run document and check it against its published JSON Schema (``docs/schema``): the
    fields every report reads, of the types it reads them as; the error names the file and the field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunDocumentError(f"{path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise RunDocumentError(f"{path}: not JSON ({error})") from None
    from jsonschema.exceptions import best_match

    problem = best_match(_validator().iter_errors(data))
    if problem is not None:
        raise RunDocumentError(f"{path}: {_problem(problem, data)}")
    return RunDocument(path, data)


SCHEMA_FILE = Path(__file__).with_name("run-document.schema.json")  # published as docs/schema/


@functools.cache
def _validator() -> Any:
    """The schema's validator, where a number is finite: Python's JSON reads NaN and Infinity, JSON has neither."""
    import jsonschema  # on first use: a session that reads no run document does not pay its import

    checker = jsonschema.Draft202012Validator.TYPE_CHECKER
    finite = checker.redefine("number", lambda _, value: _number(value))
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=finite)
    return validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _problem(error: Any, data: Any) -> str:
    """What is wrong, in the words of the schema's descriptions, at the field that holds it."""
    where = list(error.absolute_path)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        return "not a trainperf run document (no 'benchmarks' list)"
    if where[:1] != ["benchmarks"]:
        return f"{_field(where[:1])!r} must be {_description(where[:1])}"
    if len(where) == 1:
        return "'benchmarks' must be a list of cases"
    index, field = where[1], where[2:]
    case = data["benchmarks"][index]
    if error.validator == "required" and isinstance(case, dict):
        name = case.get("name") if isinstance(case.get("name"), str) else f"benchmarks[{index}]"
        missing = [_field([*field, key]) for key in error.validator_value if key not in error.instance]
        return f"case {name} lacks {', '.join(missing)}"
    if not field:
        return f"benchmarks[{index}] must be an object"
    described = _described_prefix(where)
    return f"benchmarks[{index}]: {_field(described[2:])!r} must be {_description(described)}"


def _field(where: list[Any]) -> str:
    return ".".join(str(step) for step in where)


def _node(where: list[Any]) -> dict[str, Any]:
    """The schema of the value at ``where`` in a run document, ``$ref`` followed."""
    schema: dict[str, Any] = _validator().schema
    node = schema
    for step in where:
        node = node["items"] if isinstance(step, int) else node.get("properties", {}).get(step, {})
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _described_prefix(where: list[Any]) -> list[Any]:
    """The longest part of the path to a field whose schema says what it must be, no list index in it:
    a list is named as a whole."""
    listed = next((i for i, step in enumerate(where[2:], 2) if isinstance(step, int)), len(where))
    for end in range(listed, 2, -1):
        if "description" in _node(where[:end]):
            return where[:end]
    return where[:3]


def _description(where: list[Any]) -> str:
    return str(_node(where).get("description", "what docs/schema/run-document.schema.json says"))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def merged_cases(documents: list[RunDocument]) -> list[dict[str, Any]]:
    """Every case of the documents in order of first appearance, each its latest measurement on its
    device, with its ``device``, its document's file name (``source``) and ``folder``. Where the
    documents name more than one device, each workload is kept apart per device ("gpt2 on NVIDIA H200"):
    one device's times never stand in for another's."""
    several = len({document.machine.get("name") for document in documents}) > 1
    latest: dict[tuple[Any, str], dict[str, Any]] = {}
    for document in documents:
        device = document.machine.get("name")
        for case in document.cases:
            group = f"{case['group']} on {device}" if several else case["group"]
            origin = {"device": device, "source": document.path.name, "folder": str(document.path.parent)}
            latest[device, case["name"]] = {**case, "group": group, **origin}
    return list(latest.values())


def merge(documents: list[RunDocument]) -> dict[str, Any]:
    """One run document from the workers' documents of one run: every case, every note once, the
    first worker's machine, and which worker file each came from."""
    first = documents[0].data
    return {
        **first,
        "benchmarks": [case for document in documents for case in document.cases],
        "unfinished": [case for document in documents for case in document.unfinished],
        "notes": list(dict.fromkeys(note for document in documents for note in document.data.get("notes", []))),
        "workers": [{"file": document.path.name, "machine_info": document.machine} for document in documents],
        **_recorded_by_all(documents),
    }


def _recorded_by_all(documents: list[RunDocument]) -> dict[str, Any]:
    recorded = [document.data[RECORDED] for document in documents if RECORDED in document.data]
    if not recorded:
        return {}
    return {
        RECORDED: {"device": recorded[0]["device"], "cases": {k: v for r in recorded for k, v in r["cases"].items()}}
    }


def cases_frame(cases: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row of figures per case (numbers, not text; None where a figure is unknown)."""
    import pandas as pd  # here: every process that measures a case loads this module, only reports need it

    rows = []
    for case in cases:
        info = case["extra_info"]
        summary = info["summary_ms"]
        baseline = info.get("baseline_median_ms")
        peak = info.get("peak_memory_bytes")
        work = (info.get("work") or [{}])[0]  # checked by load: a list of objects of counts
        rows.append(
            {
                "case": case["name"],
                "workload": case["group"],
                "median_ms": summary["median"],
                "iqr_ms": summary["iqr"],
                "speedup": info["speedup"],
                "per_second": info["samples_per_second"],
                "unit": info.get("sample_unit", "samples"),
                "mfu": info.get("mfu"),
                "fp8_share": info.get("fp8_flop_share"),
                "peak_mib": None if peak is None else peak / 2**20,
                "metric": info["metric"]["name"],
                "metric_value": info["metric"]["value"],
                "baseline_ms": baseline,
                "delta": None if not baseline else summary["median"] / baseline - 1.0,
                "first_step_s": info.get("first_step_s"),
                "reader_share": info.get("reader_share"),
                "host_calls": host_work_check.typical(info.get("host_calls") or []),
                "min_detectable": info.get("min_detectable_slowdown"),
                "caught_9_in_10": info.get("slowdown_caught_9_in_10"),
                "min_detectable_host_work": info.get("min_detectable_host_work"),
                "min_detectable_kernel_time": info.get("min_detectable_kernel_time"),
                "ops": work.get("ops"),
                "syncs": work.get("syncs"),
                "kernels": work.get("kernels"),
                "kernel_ms": work.get("kernel_ms"),
                "verdict": str(Verdict.read(info["verdict"])),
                "source": case.get("source"),
            }
        )
    return pd.DataFrame(rows)
