"""An error as one line of text, for notes and the run document's reasons."""

from __future__ import annotations


def first_line(error: BaseException, limit: int = 200) -> str:
    """The error's message on one line, at most ``limit`` characters."""
    text = str(error).strip().splitlines()
    return text[0][:limit] if text else "(no message)"
