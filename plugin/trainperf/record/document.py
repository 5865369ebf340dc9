"""The run document (``run.json``): the one record of a run's cases that every report reads.

Written once per run (``run_document``) in pytest-benchmark's layout where it fits (``machine_info``,
``commit_info``, ``benchmarks`` with ``stats`` in seconds), trainperf's figures, checks, profile and
communication in each case's ``extra_info``; read back (``load``), merged and tabulated for the terminal,
JUnit, HTML and Markdown. Several runs' documents merge: a case keeps its latest measurement on its device.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from pytest_benchmark import __version__ as pytest_benchmark_version
from pytest_benchmark.stats import Stats

from trainperf.judge import host_work_check, stats
from trainperf.record import profile_summary
from trainperf.record.result import CaseEntry, CaseResult
from trainperf.store.provenance import commit_info

if TYPE_CHECKING:
    from trainperf.record.session import PerfSession


REQUIRED = ("name", "group", "stats", "extra_info")
WORK_FIGURES = ("ops", "syncs", "copies", "kernels", "kernel_ms")  # what the cases table reads of the work
RECORDED = "recorded_baselines"  # the run document's key of the baseline entries it recorded
REQUIRED_INFO = ("summary_ms", "speedup", "samples_per_second", "metric", "verdict")
# figures the reports read where present
OPTIONAL_NUMBERS = ("peak_memory_bytes", "baseline_median_ms", "mfu", "first_step_s", "reader_share",
                    "min_detectable_slowdown", "slowdown_caught_9_in_10", "min_detectable_host_work",
                    "fp8_flop_share")  # fmt: skip


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
            "run_medians_ms": m.run_medians_ms or [result.summary.median],
            "host_calls": m.host_calls,
            "host_step_calls": m.host_step_calls,
            "host_fetch_calls": m.host_fetch_calls,
            "host_torch_calls": m.host_torch_calls,
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
            "checks": [{"name": c.name, "passed": c.passed, "message": c.message} for c in result.checks],
            "verdict": result.verdict,
            "reader_ms_median": stats.summarize(m.reader_ms).median,
            "profile": None if result.profile is None else profile_summary.record(result.profile),
        },
    }


def run_document(session: PerfSession) -> dict[str, Any]:
    return {
        "version": pytest_benchmark_version,  # the format's writer, as pytest-benchmark's own files say
        "trainperf_version": importlib.metadata.version("pytest-trainperf"),
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine_info": session.fingerprint.as_dict(),
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
    def unfinished(self) -> list[dict[str, str]]:
        """Cases that started and did not finish: name, fullname, verdict, reason."""
        return list(self.data.get("unfinished", []))


def load(path: Path) -> RunDocument:
    """Read and check one run document."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunDocumentError(f"{path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise RunDocumentError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise RunDocumentError(f"{path}: not a trainperf run document (no 'benchmarks' list)")
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        raise RunDocumentError(f"{path}: 'notes' must be a list of strings")
    unfinished = data.get("unfinished", [])
    if not isinstance(unfinished, list) or not all(_unfinished_case(case) for case in unfinished):
        raise RunDocumentError(f"{path}: 'unfinished' must be a list of objects with string name, verdict, reason")
    for index, case in enumerate(data["benchmarks"]):
        _check_case(path, index, case)
    return RunDocument(path, data)


def _check_case(path: Path, index: int, case: Any) -> None:
    """The fields every report reads, of the types it reads them as; the error names file and field."""
    where = f"{path}: benchmarks[{index}]"
    if not isinstance(case, dict):
        raise RunDocumentError(f"{where} must be an object")
    missing = [key for key in REQUIRED if key not in case]
    info = case.get("extra_info")
    missing += [f"extra_info.{key}" for key in REQUIRED_INFO if not isinstance(info, dict) or key not in info]
    if missing:
        raise RunDocumentError(f"{path}: case {case.get('name', f'benchmarks[{index}]')} lacks {', '.join(missing)}")
    assert isinstance(info, dict)
    summary, metric = info["summary_ms"], info["metric"]
    wrong = [
        ("'name' must be a string", isinstance(case["name"], str)),
        ("'group' must be a string", isinstance(case["group"], str)),
        ("'extra_info.summary_ms' must be an object", isinstance(summary, dict)),
        ("'extra_info.summary_ms.median' must be a positive number", _positive(_get(summary, "median"))),
        ("'extra_info.summary_ms.iqr' must be a number", _number(_get(summary, "iqr"))),
        ("'extra_info.speedup' must be a number or null", info["speedup"] is None or _number(info["speedup"])),
        ("'extra_info.samples_per_second' must be a number", _number(info["samples_per_second"])),
        ("'extra_info.metric' must be an object", isinstance(metric, dict)),
        ("'extra_info.metric' needs 'name' and a numeric 'value'", _metric(metric)),
        ("'extra_info.verdict' must be a string", isinstance(info["verdict"], str)),
    ]
    wrong += [
        (f"'extra_info.{key}' must be a number or null", _optional_number(info.get(key))) for key in OPTIONAL_NUMBERS
    ]
    wrong.append(("'extra_info.sample_unit' must be a string", isinstance(info.get("sample_unit", ""), str)))
    for key in ("host_calls", "host_step_calls", "host_fetch_calls"):  # absent where written before counted
        wrong.append((f"'extra_info.{key}' must be a list of positive numbers", _positive_list(info.get(key, []))))
    wrong.append(("'extra_info.work' must be a list of objects of counts", _work(info.get("work", []))))
    for message, holds in wrong:
        if not holds:
            raise RunDocumentError(f"{where}: {message}")


def _work(work: Any) -> bool:
    """The work counted per run (absent where written before it was): objects whose counts the cases
    table reads are numbers or null."""
    return isinstance(work, list) and all(
        isinstance(run, dict) and all(_optional_number(run.get(key)) for key in WORK_FIGURES) for run in work
    )


def _optional_number(value: Any) -> bool:
    return value is None or _number(value)


def _unfinished_case(case: Any) -> bool:
    return isinstance(case, dict) and all(isinstance(case.get(key), str) for key in ("name", "verdict", "reason"))


def _get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: Any) -> bool:
    return _number(value) and value > 0


def _positive_list(values: Any) -> bool:
    return isinstance(values, list) and all(_positive(value) for value in values)


def _metric(metric: Any) -> bool:
    return isinstance(metric, dict) and isinstance(metric.get("name"), str) and _number(metric.get("value"))


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
                "ops": work.get("ops"),
                "syncs": work.get("syncs"),
                "kernels": work.get("kernels"),
                "kernel_ms": work.get("kernel_ms"),
                "verdict": info["verdict"],
                "source": case.get("source"),
            }
        )
    return pd.DataFrame(rows)
