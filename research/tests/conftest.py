"""Helpers for the research's own tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def placed_run(tmp_path: Path) -> Callable[[Path, str], Path]:
    """Places a captured run document where the device scripts leave it, ``RUN/run.json``: the row tools
    name each run by its folder."""

    def place(captured: Path, run: str) -> Path:
        path = tmp_path / run / "run.json"
        path.parent.mkdir()
        shutil.copy(captured, path)
        return path

    return place
