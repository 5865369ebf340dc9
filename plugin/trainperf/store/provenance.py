"""Which code a run measured: the checkout's commit, recorded in baselines and run documents, and whether
its tracked files differed from that commit."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path


@functools.cache
def git_commit(folder: Path | None = None) -> str | None:
    """HEAD of the checkout holding ``folder`` (the current directory by default), else CI's
    ``GITHUB_SHA``, else None (no git metadata); read once per process and folder."""
    command = ["git", "rev-parse", "HEAD"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=10, cwd=folder)
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("GITHUB_SHA")
    return out.stdout.strip() or os.environ.get("GITHUB_SHA")


@functools.cache
def git_dirty() -> bool | None:
    """Whether tracked files differ from HEAD, so that no commit holds the measured code; None without git."""
    command = ["git", "status", "--porcelain", "--untracked-files=no"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip())


def commit_info() -> dict[str, str | bool | None]:
    """pytest-benchmark's ``commit_info`` of a run document: the commit's id and ``dirty``."""
    return {"id": git_commit(), "dirty": git_dirty()}
