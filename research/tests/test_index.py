"""research/README.md is how a reader finds a study: an evidence file it does not name is lost to them."""

from __future__ import annotations

from pathlib import Path

RESEARCH = Path(__file__).resolve().parent.parent


def test_every_evidence_file_is_named_in_the_research_index() -> None:
    index = (RESEARCH / "README.md").read_text(encoding="utf-8")
    files = sorted(path.name for path in (RESEARCH / "evidence").glob("*.md"))
    unlisted = [name for name in files if f"evidence/{name}" not in index]
    assert not unlisted, f"add these to research/README.md: {unlisted}"
