"""Structural mutations of the real captures in tests/data: every parser raises its own error type or
returns a result that the analysis after it can use."""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trainperf.measure import torch_trace
from trainperf.measure.torch_trace import ProfileFormatError
from trainperf.profile import launches
from trainperf.profile.launches import STATS_REPORTS
from trainperf.record import document
from trainperf.record.document import RunDocumentError

DATA = Path(__file__).parent / "data"
# Each draw a fresh copy: a shared list or dict, once placed in a document, could be mutated into itself.
ODD_VALUES = st.sampled_from([None, "x", "", -1, 0, 1e300, float("nan"), [], [None], {}, {"a": 1}, True]).map(
    copy.deepcopy
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _analysed(capture: torch_trace.Capture) -> None:
    """What the profilers do with a capture (``backend.from_capture``)."""
    marked = launches.iteration_launches(capture)
    launches.bottleneck(capture, marked, None, None)
    top = launches.top_kernels(launches.kernel_table(marked))
    launches.launch_configs(marked, top["name"])


TRACE = json.loads(gzip.decompress((DATA / "gpt2_stack.trace.json.gz").read_bytes()))
USED = [i for i, e in enumerate(TRACE["traceEvents"]) if e.get("cat") in ("kernel", "cuda_runtime", "user_annotation")]


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(USED),
            st.sampled_from(["ts", "dur", "name", "cat", "args", "correlation", "grid", "block"]),
            st.booleans(),
            ODD_VALUES,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_torch_trace_mutations_raise_only_the_format_error(mutations: list[tuple[int, str, bool, Any]]) -> None:
    events = list(TRACE["traceEvents"])
    for index, key, delete, value in mutations:
        event = copy.deepcopy(events[index])
        holder = (
            event["args"] if key in ("correlation", "grid", "block") and isinstance(event.get("args"), dict) else event
        )
        if delete:
            holder.pop(key, None)
        else:
            holder[key] = value
        events[index] = event
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
        with contextlib.suppress(ProfileFormatError):
            _analysed(torch_trace.read_torch_trace(path))


STATS = DATA / "h200_digits_amp_bf16"  # nsys stats' CSV reports of one H200 capture
STATS_COLUMNS = {report: list(pd.read_csv(f"{STATS}_{report}.csv", nrows=0).columns) for report in STATS_REPORTS}


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(STATS_REPORTS),
            st.integers(0, 20),
            st.sampled_from(["empty", "text", "negative", "drop_column", "delete_rows", "truncate"]),
            st.integers(1, 50),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_nsys_stats_mutations_raise_only_the_format_error(mutations: list[tuple[str, int, str, int]]) -> None:
    tables = {r: pd.read_csv(f"{STATS}_{r}.csv", dtype=str, keep_default_na=False) for r in STATS_REPORTS}
    texts: dict[str, str | None] = {}
    for report, pick, how, every in mutations:
        table = tables[report]
        column = STATS_COLUMNS[report][pick % len(STATS_COLUMNS[report])]
        rows = table.index % every == 0
        if how in ("empty", "text", "negative") and column in table:
            table.loc[rows, column] = {"empty": "", "text": "x", "negative": f"-{every}"}[how]
        elif how == "drop_column":
            tables[report] = table.drop(columns=column, errors="ignore")
        elif how == "delete_rows":
            tables[report] = table[~rows]
        elif how == "truncate":
            texts[report] = tables[report].to_csv(index=False)[: every * 40]
    with tempfile.TemporaryDirectory() as folder:
        prefix = Path(folder) / "nsys"
        for report, table in tables.items():
            text = texts.get(report, table.to_csv(index=False))
            Path(f"{prefix}_{report}.csv").write_text(text or "", encoding="utf-8")
        with contextlib.suppress(ProfileFormatError):
            _analysed(launches.read_nsys_stats(prefix))


RUN_DOCUMENTS = sorted(DATA.glob("*.run.json"))


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in a JSON tree, lists' first two items only (the documents are large)."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            found += _paths(value, (*prefix, index))
    return found


def test_the_unmutated_captures_parse() -> None:
    """The mutations start from documents the parsers accept, so that accepting a mutation means something."""
    for path in RUN_DOCUMENTS:
        document.cases_frame(document.load(path).cases)
    _analysed(launches.read_nsys_stats(STATS))
    path = DATA / "gpt2_stack.trace.json.gz"
    _analysed(torch_trace.read_torch_trace(path))


DOCUMENTS = {path: json.loads(path.read_text(encoding="utf-8")) for path in RUN_DOCUMENTS}
PATHS = {path: _paths(data)[1:] for path, data in DOCUMENTS.items()}


@pytest.mark.parametrize("source", RUN_DOCUMENTS, ids=lambda p: p.name)
@FUZZ
@given(data=st.data())
def test_run_document_mutations_raise_only_the_document_error(source: Path, data: st.DataObject) -> None:
    mutated = copy.deepcopy(DOCUMENTS[source])
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(PATHS[source]))
        node = mutated
        try:
            for step in where[:-1]:
                node = node[step]
            if data.draw(st.booleans()) and isinstance(node, dict):
                node.pop(where[-1], None)
            else:
                node[where[-1]] = data.draw(ODD_VALUES)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        path.write_text(json.dumps(mutated), encoding="utf-8")
        try:
            loaded = document.load(path)
        except RunDocumentError:
            return
        document.cases_frame(loaded.cases)
