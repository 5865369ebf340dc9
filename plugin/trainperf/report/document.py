"""Run documents (``run.json``) read back for reports: checked, merged, and tabulated. Pure: pandas only.

Several documents (one per pytest run, say digits and GPT-2 on the same device) merge into one list of
cases; a case found in more than one document keeps its latest measurement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

REQUIRED = ("name", "group", "stats", "extra_info")
REQUIRED_INFO = ("summary_ms", "speedup", "samples_per_second", "metric", "verdict")


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
    for index, case in enumerate(data["benchmarks"]):
        missing = [key for key in REQUIRED if key not in case]
        missing += [f"extra_info.{key}" for key in REQUIRED_INFO if key not in case.get("extra_info", {})]
        if missing:
            name = case.get("name", f"benchmarks[{index}]")
            raise RunDocumentError(f"{path}: case {name} lacks {', '.join(missing)}")
    return RunDocument(path, data)


def merged_cases(documents: list[RunDocument]) -> list[dict[str, Any]]:
    """Every case of the documents in order of first appearance, each its latest measurement, with the
    document it came from under ``source``."""
    latest: dict[str, dict[str, Any]] = {}
    for document in documents:
        for case in document.cases:
            latest[case["name"]] = {**case, "source": document.path.name}
    return list(latest.values())


def merge(documents: list[RunDocument]) -> dict[str, Any]:
    """One run document from the workers' documents of one run: every case, every note once, the
    first worker's machine, and which worker file each came from."""
    first = documents[0].data
    return {
        **first,
        "benchmarks": [case for document in documents for case in document.cases],
        "notes": list(dict.fromkeys(note for document in documents for note in document.data.get("notes", []))),
        "workers": [{"file": document.path.name, "machine_info": document.machine} for document in documents],
    }


def cases_frame(cases: list[dict[str, Any]]) -> pd.DataFrame:
    """One row of figures per case (numbers, not text; None where a figure is unknown)."""
    rows = []
    for case in cases:
        info = case["extra_info"]
        summary = info["summary_ms"]
        baseline = info.get("baseline_median_ms")
        peak = info.get("peak_memory_bytes")
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
                "peak_mib": None if peak is None else peak / 2**20,
                "metric": info["metric"]["name"],
                "metric_value": info["metric"]["value"],
                "baseline_ms": baseline,
                "delta": None if not baseline else summary["median"] / baseline - 1.0,
                "first_step_s": info.get("first_step_s"),
                "verdict": info["verdict"],
                "source": case.get("source"),
            }
        )
    return pd.DataFrame(rows)
