"""Text from run documents made safe where the reports show it: a case name holding markup, a table's
pipe, a newline or a NUL byte shows as written, escapes visible, and neither runs nor breaks a page."""

from __future__ import annotations

import html
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(value: object) -> str:
    """Control characters as their Python escapes (``\\n``, ``\\x00``): one name stays one line."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], str(value))


def markdown_text(value: object) -> str:
    """Markup escaped as in HTML (Markdown passes HTML through), a pipe escaped so a table keeps its cells."""
    return html.escape(visible(value), quote=False).replace("|", "\\|")
