"""Which code a run measured: the commit, and whether the checkout's tracked files differed from it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from trainperf.store import provenance


@pytest.fixture(autouse=True)
def fresh_reads() -> Iterator[None]:
    provenance.git_commit.cache_clear()
    provenance.git_dirty.cache_clear()
    yield
    provenance.git_commit.cache_clear()
    provenance.git_dirty.cache_clear()


def git(*args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def test_a_changed_tracked_file_marks_the_commit_dirty_and_an_untracked_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    git("init", "-q")
    (tmp_path / "train.py").write_text("steps = 1\n")
    git("add", "train.py")
    git("commit", "-q", "-m", "first")
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert provenance.commit_info() == {"id": git("rev-parse", "HEAD"), "dirty": False}
    provenance.git_dirty.cache_clear()
    (tmp_path / "train.py").write_text("steps = 2\n")
    assert provenance.commit_info()["dirty"] is True


def test_outside_a_checkout_neither_is_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    assert provenance.commit_info() == {"id": None, "dirty": None}
