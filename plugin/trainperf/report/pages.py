"""The experiment report written as ``report.html`` (one self-contained page: charts embedded, every text
escaped) and ``report.md`` (charts as PNG files beside it)."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd

from trainperf.report.escape import html_text, markdown_text
from trainperf.report.experiment import CaseProfileView, Report, WorkloadSection
from trainperf.report.headline import Headline
from trainperf.report.memory_view import MemoryView
from trainperf.report.tables import cell_text, markdown_table

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
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_text(report.title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{_text(report.title)}</h1>",
        _html_headline(report.headline),
    ]
    if not report.unfinished.empty:
        parts += ["<h2>Cases that did not finish</h2>", table_html(report.unfinished)]
    parts += [_html_section(section) for section in report.sections]
    if report.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_text(n)}</li>" for n in report.notes) + "</ul>")
    clocks = table_html(report.clocks) if not report.clocks.empty else "<p>no clock readings (CPU run)</p>"
    parts += [
        f"<details><summary>Device</summary>{table_html(report.device)}</details>",
        f"<details><summary>Clocks seen (before and after each case's timed run)</summary>{clocks}</details>",
    ]
    parts.append("<p>From " + ", ".join(f"<code>{_text(s)}</code>" for s in report.sources) + "</p></body></html>")
    path = directory / HTML_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _html_headline(headline: Headline) -> str:
    counts = ", ".join(f"<span class='{_text(v)}'>{n} {_text(v)}</span>" for v, n in headline.counts.items())
    parts = [f"<p class='verdict'>{counts}</p>"]
    if headline.failures:
        items = "".join(f"<li>{_text(message)}</li>" for message in headline.failures)
        parts.append(f"<ul class='fail'>{items}</ul>")
    if not headline.best.empty:
        parts.append(table_html(headline.best))
    return "".join(parts)


def _html_section(section: WorkloadSection) -> str:
    profiles = "".join(_html_profile(view) for view in section.profiles)
    speedup = _image(section.speedup_png, section.name + ": what each step buys") if section.speedup_png else ""
    return (
        f"<h2>{_text(section.name)}</h2>{speedup}{table_html(section.cases)}"
        f"<div class='pair'>{profiles}</div>"
        f"<h3>Time per iteration</h3>{_image(section.timing_png, section.name + ': time per iteration')}"
        + (
            f"<h3>The cases on the roofline</h3>{_image(section.ladder_png, section.name + ': cases on the roofline')}"
            if section.ladder_png
            else ""
        )
        + _html_memory(section)
    )


def _html_memory(section: WorkloadSection) -> str:
    if section.memory.empty:
        return ""
    parts = [f"<h3>{MEMORY_TITLE}</h3>", table_html(section.memory)]
    for view in section.memory_views:
        parts.append(f"<p>{_text(_memory_caption(view))}</p>")
        if view.chart_png:
            parts.append(_image(view.chart_png, view.case + " memory by phase"))
    return "".join(parts)


def _memory_caption(view: MemoryView) -> str:
    if view.snapshot is None:
        return f"{view.case}: snapshot file not found beside the run document nor where recorded: no chart"
    return f"{view.case}: snapshot {view.snapshot} (opens in pytorch.org/memory_viz)"


def _html_profile(view: CaseProfileView) -> str:
    parts = [f"<div><h3>{_text(view.case)}: {_text(view.role)}</h3><p>{_text(view.summary)}</p>"]
    if view.verdict:
        parts.append(f"<p class='verdict'>{_text(view.verdict)}</p>")
    if not view.top.empty:
        unit = str(view.top.columns[1])  # "kernel" or "operator"
        parts.append(table_html(view.top.drop(columns="full name"), name_column=unit))
        names = "".join(f"<li>{_text(name)}</li>" for name in view.top["full name"])
        parts.append(f"<details><summary>full {unit} names</summary><ol class='names'>{names}</ol></details>")
    if view.reasons:
        parts.append("<ul>" + "".join(f"<li>{_text(reason)}</li>" for reason in view.reasons) + "</ul>")
    if view.roofline_png:
        parts.append(_image(view.roofline_png, view.case + " roofline"))
    return "".join(parts) + "</div>"


def table_html(frame: pd.DataFrame, name_column: str | None = None) -> str:
    """A table with every cell escaped; the long kernel names in a narrow monospace column."""
    head = "".join(f"<th>{_text(column)}</th>" for column in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, record, strict=True):
            css = " class='name'" if column == name_column else ""
            cells.append(f"<td{css}>{_text(cell_text(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _image(data: bytes, alt: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f"<img alt='{_text(alt)}' src='data:image/png;base64,{encoded}'>"


def _text(value: object) -> str:
    return html_text(value)


def _md(value: object) -> str:
    return markdown_text(value)


def write_markdown(report: Report, directory: Path) -> Path:
    images = directory / IMAGES
    images.mkdir(parents=True, exist_ok=True)
    lines = [f"# {_md(report.title)}", "", *_markdown_headline(report.headline)]
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
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


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
    path.write_bytes(data)
    return path


def _slug(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_" else "-" for char in name)
