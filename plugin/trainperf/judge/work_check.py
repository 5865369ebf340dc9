"""The work check: a case must not ask the machine for more work per iteration than its recorded runs
did (``measure/work.py``): more ATen ops, more synchronizations with the device, more copies between
host and device, more kernel launches.

Counts hold still where the code does: the same code dispatches the same ops on a fast or a slow host,
so the check needs no allowance for the host's noise. Where the counted iterations of a run, or the
recorded runs, differ (data-dependent paths, batches arriving from worker processes), that spread is
the allowance. A failure names what rose, as ``+600 aten::add``. Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainperf.judge.checks import Check, CheckName

# the counts judged, with the words a message uses for them
COUNTS = {"ops": "ATen ops", "syncs": "synchronizations", "copies": "host-device copies", "kernels": "kernels"}


def work_check(case: str, now: Mapping[str, Any] | None, recorded: Sequence[Mapping[str, Any]]) -> Check | None:
    """The case's work per iteration against its recorded runs' (None where this run counted none)."""
    if now is None:
        return None
    counted = _counted_text(now)
    if not recorded:
        return Check(CheckName.WORK, None, f"{case}: {counted}; none counted where recorded: record again")
    risen = [text for key, words in COUNTS.items() if (text := _rise(key, words, now, recorded)) is not None]
    if risen:
        moved = rises(now.get("ops_by_name") or {}, recorded[0].get("ops_by_name") or {})
        what = f" ({', '.join(moved)} per iteration)" if moved else ""
        return Check(CheckName.WORK, False, f"{case}: more work per iteration than recorded: {'; '.join(risen)}{what}")
    return Check(CheckName.WORK, True, f"{case}: {counted}, as recorded")


def _rise(key: str, words: str, now: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> str | None:
    """'ATen ops 1758 against 1157 recorded (+601, allowed +0)', or None where the count did not rise
    beyond the spread of the recorded runs and of the counted iterations."""
    stored = [run[key] for run in recorded if run.get(key) is not None]
    if now.get(key) is None or not stored:
        return None
    spreads = [max(stored) - min(stored), *(run.get(f"{key}_spread", 0) for run in [*recorded, now])]
    allowed = max(spreads)
    if now[key] - max(stored) <= allowed:
        return None
    return f"{words} {now[key]} against {max(stored)} recorded (+{now[key] - max(stored)}, allowed +{allowed})"


def _counted_text(work: Mapping[str, Any]) -> str:
    parts = [f"{work[key]} {words}" for key, words in COUNTS.items() if work.get(key) is not None]
    return ", ".join(parts) + " per iteration"


def rises(now: Mapping[str, int], stored: Mapping[str, int], shown: int = 3) -> list[str]:
    """The names whose count rose most, as '+600 aten::add': what a failure says moved."""
    risen = sorted(((n - stored.get(name, 0), name) for name, n in now.items()), reverse=True)
    return [f"+{delta} {name}" for delta, name in risen[:shown] if delta > 0]
