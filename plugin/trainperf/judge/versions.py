"""What changed under a case since its recording: torch, CUDA, cuDNN, the driver or the GPU's board, read
from the baseline entry's fingerprint against this run's. The single most common reason the work
counts of a whole suite move at once is an upgrade, so every view says so, and a count that moved with
one is labelled as such: a failure where the user chose it, a note otherwise. Pure: no torch, no pytest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainperf.judge.checks import Check

WATCHED = {"torch": "torch", "cuda": "CUDA", "cudnn": "cuDNN", "driver": "driver", "board_part_number": "board"}


def changes(recorded: Mapping[str, Any] | None, running: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Each watched field known on both sides that differs: field -> (recorded, running)."""
    if not recorded:
        return {}
    return {
        field: (str(recorded[field]), str(running[field]))
        for field in WATCHED
        if recorded.get(field) is not None and running.get(field) is not None and recorded[field] != running[field]
    }


def line(changed: Mapping[str, tuple[str, str]]) -> str:
    """'recorded with torch 2.11.0+cu130, running 2.12.0+cu130; CUDA 13.0 -> 13.1'."""
    parts = [f"{WATCHED[field]} {then} -> {now}" for field, (then, now) in changed.items()]
    first, _, now = parts[0].partition(" -> ")
    return "; ".join([f"recorded with {first}, running {now}", *parts[1:]])


def short(changed: Mapping[str, tuple[str, str]]) -> str:
    """'torch 2.11.0+cu130 -> 2.12.0+cu130, CUDA 13.0 -> 13.1'."""
    return ", ".join(f"{WATCHED[field]} {then} -> {now}" for field, (then, now) in changed.items())


def moved_with_upgrade(case: str, check: Check, changed: Mapping[str, tuple[str, str]], fail: bool) -> Check:
    """A failed work check of a case whose versions changed, labelled: the counts moved with the upgrade.
    A note (not judged) unless ``fail``; a check that passed, or a case whose versions held, as it is."""
    if check.passed is not False or not changed:
        return check
    figures = check.message.removeprefix(f"{case}: ")
    return Check(check.name, False if fail else None, f"{case}: moved with the upgrade ({short(changed)}): {figures}")
