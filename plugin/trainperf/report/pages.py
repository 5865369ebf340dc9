"""The experiment report written as ``report.html`` (one self-contained page: charts embedded, every text
escaped) and ``report.md`` (charts as PNG files beside it)."""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import jinja2
import pandas as pd

from trainperf.report.escape import markdown_text, visible
from trainperf.report.experiment import CaseProfileView, Report, WorkloadSection
from trainperf.report.headline import Headline
from trainperf.report.memory_view import MemoryView
from trainperf.report.tables import cell_text, markdown_table
from trainperf.store.locked_file import atomic_write

HTML_FILE = "report.html"
MARKDOWN_FILE = "report.md"
IMAGES = "report-images"
MEMORY_TITLE = "Memory by phase (one recorded iteration, MiB)"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.name, ol.names { font-family: monospace; font-size: 0.8em; overflow-wrap: anywhere; }
td.name { max-width: 22em; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.5em; }
.verdict { font-weight: 600; }
img { max-width: 100%; border: 1px solid #ddd; }
.fail { color: #b00; }
"""


def write_html(report: Report, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    page = _templates().get_template("report.html")
    path = directory / HTML_FILE
    return atomic_write(path, page.render(report=report, style=STYLE, memory_title=MEMORY_TITLE))


def table_html(frame: pd.DataFrame, name_column: str | None = None) -> str:
    """A table with every cell escaped; the long kernel names in a narrow monospace column."""
    return str(_templates().get_template("table.html").module.table(frame, name_column))  # type: ignore[attr-defined]


@functools.cache
def _templates() -> jinja2.Environment:
    """The page's templates: every value escaped as HTML, its control characters shown as escapes."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters.update(
        visible=visible,
        cell=cell_text,
        base64=lambda data: base64.b64encode(data).decode("ascii"),
        memory_caption=_memory_caption,
    )
    environment.globals["zip"] = zip
    return environment


def _memory_caption(view: MemoryView) -> str:
    if view.snapshot is None:
        return f"{view.case}: snapshot file not found beside the run document nor where recorded: no chart"
    return f"{view.case}: snapshot {view.snapshot} (opens in pytorch.org/memory_viz)"


def _md(value: object) -> str:
    return markdown_text(value)


def write_markdown(report: Report, directory: Path) -> Path:
    images = directory / IMAGES
    images.mkdir(parents=True, exist_ok=True)
    lines = [f"# {_md(report.title)}", "", *[f"> **versions**: {_md(changed)}" for changed in report.version_changes]]
    lines += [""] if report.version_changes else []
    lines += _markdown_headline(report.headline)
    if report.culprits:
        lines += ["## Culprits (trainperf bisect)", "", *[f"- {_md(line)}" for line in report.culprits], ""]
    for section in report.sections:
        name = _md(section.name)
        lines += [f"## {name}", ""]
        if section.speedup_png:
            chart = _save(section.speedup_png, images / f"{_slug(section.name)}-ladder.png")
            lines += [f"![{name}: what each step buys]({IMAGES}/{chart.name})", ""]
        lines += [markdown_table(section.cases), ""]
        for view in section.profiles:
            lines += _markdown_profile(view, images, _slug(section.name))
        timing = _save(section.timing_png, images / f"{_slug(section.name)}-timing.png")
        lines += ["### Time per iteration", "", f"![{name}: time per iteration]({IMAGES}/{timing.name})", ""]
        if section.ladder_png:
            ladder = _save(section.ladder_png, images / f"{_slug(section.name)}-ladder-roofline.png")
            lines += [
                "### The cases on the roofline",
                "",
                f"![{name}: cases on the roofline]({IMAGES}/{ladder.name})",
                "",
            ]
        lines += _markdown_memory(section, images)
    if not report.unfinished.empty:
        lines += ["## Cases that did not finish", "", markdown_table(report.unfinished), ""]
    if report.notes:
        lines += ["## Notes", "", *[f"- {_md(note)}" for note in report.notes], ""]
    lines += ["## Device", "", markdown_table(report.device), ""]
    if not report.clocks.empty:
        lines += ["### Clocks seen (before and after each case's timed run)", "", markdown_table(report.clocks), ""]
    lines += ["From " + ", ".join(f"`{_md(source)}`" for source in report.sources), ""]
    path = directory / MARKDOWN_FILE
    return atomic_write(path, "\n".join(lines))


def _markdown_headline(headline: Headline) -> list[str]:
    lines = [", ".join(f"**{count} {verdict}**" for verdict, count in headline.counts.items()), ""]
    lines += [f"- {_md(message)}" for message in headline.failures]
    lines += [""] if headline.failures else []
    if not headline.best.empty:
        lines += [markdown_table(headline.best), ""]
    return lines


def _markdown_profile(view: CaseProfileView, images: Path, section: str) -> list[str]:
    """The profile of one case; its roofline chart saved as <section>-<step>-roofline.png, so that one
    case's charts of two devices (two sections) both stay."""
    lines = [f"### {_md(view.case)}: {_md(view.role)}", "", _md(view.summary), ""]
    if view.verdict:
        lines += [f"**{_md(view.verdict)}**", ""]
    if not view.top.empty:
        lines += [markdown_table(view.top.drop(columns="full name")), ""]
    lines += [*map(_md, view.reasons), ""] if view.reasons else []
    if view.roofline_png:
        step = view.case.rsplit("/", 1)[-1]
        chart = _save(view.roofline_png, images / f"{section}-{_slug(step)}-roofline.png")
        lines += [f"![{_md(view.case)} roofline]({IMAGES}/{chart.name})", ""]
    return lines


def _markdown_memory(section: WorkloadSection, images: Path) -> list[str]:
    if section.memory.empty:
        return []
    lines = [f"### {MEMORY_TITLE}", "", markdown_table(section.memory), ""]
    for view in section.memory_views:
        lines += [_md(_memory_caption(view)), ""]
        if view.chart_png:
            step = view.case.rsplit("/", 1)[-1]
            chart = _save(view.chart_png, images / f"{_slug(section.name)}-{_slug(step)}-memory.png")
            lines += [f"![{_md(view.case)} memory by phase]({IMAGES}/{chart.name})", ""]
    return lines


def _save(data: bytes, path: Path) -> Path:
    return atomic_write(path, data)


def _slug(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_" else "-" for char in name)
