"""Which code a run measured: the checkout's commit, recorded in baselines and run documents."""

from __future__ import annotations

import functools
import os
import subprocess


@functools.cache
def git_commit() -> str | None:
    """HEAD of the checkout, else CI's ``GITHUB_SHA``, else None (no git metadata); read once per process."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("GITHUB_SHA")
    return out.stdout.strip() or os.environ.get("GITHUB_SHA")
