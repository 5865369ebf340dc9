"""pytest-html: each profiled case's row carries its Top-5 table (names escaped) and its roofline chart."""

from __future__ import annotations

import base64
import html
from typing import Any

from trainperf.report import profile_summary
from trainperf.report.experiment import top_table
from trainperf.report.pages import table_html
from trainperf.session import CaseResult


def extras_for(result: CaseResult) -> list[dict[str, Any]]:
    """pytest-html extras of a case: nothing without a profile, one line when profiling failed."""
    from pytest_html import extras

    case = result.profile
    if case is None:
        return []
    if case.profile is None:
        return [extras.html(f"<p>trainperf: no profile ({html.escape(str(case.error))})</p>")]
    found = case.profile
    heading = html.escape(profile_summary.lines(result.key, case)[0].split("\n")[0])
    table = table_html(top_table(profile_summary.top_records(case), found.unit), name_column=found.unit)
    added = [extras.html(f"<div class='trainperf-top5'><p>{heading}</p>{table}</div>")]
    for chart in (path for path in case.files if path.name == "roofline.png" and path.is_file()):
        encoded = base64.b64encode(chart.read_bytes()).decode("ascii")  # the chart the case already wrote
        added.append(extras.png(encoded, name=f"{result.key} roofline"))
    return added
