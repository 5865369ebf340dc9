"""pytest-html: each profiled case's row carries its Top-5 table (names escaped) and its roofline chart,
as the report's page shows them, and a case with a memory snapshot its chart of memory by phase."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from trainperf.record.result import CaseEntry


def extras_for(entry: CaseEntry) -> list[dict[str, Any]]:
    """pytest-html extras of a case: its memory chart, then its profile (one line when profiling failed)."""
    from pytest_html import extras

    memory = entry["extra_info"].get("memory_snapshot")
    charted = [] if not memory else [extras.png(_encoded(Path(memory["chart"])), name=f"{entry['name']} memory")]
    return charted + profile_extras(entry)


def _encoded(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def profile_extras(entry: CaseEntry) -> list[dict[str, Any]]:
    from pytest_html import extras

    profile = entry["extra_info"]["profile"]
    if profile is None:
        return []
    if "tool" not in profile:
        return [extras.html(f"<p>trainperf: no profile ({html.escape(str(profile['error']))})</p>")]
    # the views import matplotlib: only a profiled row pays for it, not every pytest-html run
    from trainperf.report.experiment import profile_view
    from trainperf.report.pages import table_html

    view = profile_view(entry, "profiled")
    unit = str(view.top.columns[1])
    table = table_html(view.top.drop(columns="full name"), name_column=unit)
    added = [extras.html(f"<div class='trainperf-top5'><p>{html.escape(view.summary)}</p>{table}</div>")]
    if view.roofline_png:
        encoded = base64.b64encode(view.roofline_png).decode("ascii")
        added.append(extras.png(encoded, name=f"{entry['name']} roofline"))
    return added
