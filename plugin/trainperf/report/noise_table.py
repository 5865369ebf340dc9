"""``trainperf noise FILE.json``: per case of a baseline file, the noise the gate measured and the slowdown
it therefore catches, before any run. A case whose recording spread widely (a busy host) or that has
fewer than three runs shows here as the gate sees it, so that its baselines can be recorded again. A case
whose GPU waited for the host is judged on its host calls per iteration too, which move far less than
its time: the rise in them that fails it shows beside, and on a GPU its time awaits calibration until
runs of later sessions measure its noise (``baselines.awaits_calibration``): its "set by" says so.
``trainperf calibrate`` prints, for the cases whose threshold its runs moved, the threshold before and
after.

Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from trainperf.judge import checks, host_work_check, stats
from trainperf.store import baselines


def noise_frame(cases: Mapping[str, Mapping[str, Any]], floor: float = checks.DEFAULT_FLOOR) -> pd.DataFrame:
    """One row per case, widest ``threshold`` first (the cases the gate protects least): the runs recorded
    and accepted since, their center, the run medians' and the iterations' spread, the slowdown the gate
    fails (``threshold``, caught half the time) and the one it catches nine times in ten (``caught 9/10``), what set the
    first, and the rise in host calls it fails where it judges them."""
    rows = [_row(name, entry, floor) for name, entry in cases.items()]
    columns = [
        "case", "runs", "accepted", "center ms", "run spread", "iteration spread", "threshold", "caught 9/10",
        "set by", "host work",
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["threshold", "case"], ascending=[False, True], kind="stable", ignore_index=True)


def _row(name: str, entry: Mapping[str, Any], floor: float) -> list[Any]:
    stored = baselines.stored_baseline(entry)
    noise = stored.noise(floor)
    return [
        name,
        len(stored.run_medians_ms),
        len(stored.history_ms),
        noise.center_ms,
        noise.spread,
        noise.iteration_spread,
        noise.threshold,
        stats.reliably_caught(noise),
        set_by(noise, floor) + f"; {baselines.AWAITS}" * baselines.awaits_calibration(entry),
        host_work_detects(entry, floor),
    ]


def host_work_detects(entry: Mapping[str, Any], floor: float) -> float | None:
    """The rise in host calls per iteration the gate fails where the recording or a run accepted since
    waited for the host (a GPU busy under 90%), or where no busy share was kept (a CPU); else None: such a
    case is judged on its host work only in a run whose GPU waits."""
    calls = baselines.stored_calls(entry)
    return host_work_check.threshold(calls, None if not calls.gpu_busy_shares else 1.0, floor)


def set_by(noise: stats.RunNoise, floor: float) -> str:
    """What the threshold is: the floor, the fallback of a baseline without measured noise, or the spread
    of the run medians or of the iterations within a run, whichever is larger."""
    if noise.spread is None:
        return f"fallback: fewer than {stats.MIN_RUNS} runs"
    if noise.threshold <= floor:
        return "floor"
    return "iterations within a run" if noise.iteration_spread > noise.spread else "run medians"


def render(frame: pd.DataFrame) -> str:
    """The frame as a text table, spreads and thresholds in percent."""
    shown = frame.assign(
        **{
            "center ms": frame["center ms"].map(lambda v: f"{v:.3f}"),
            "run spread": frame["run spread"].map(lambda v: "" if pd.isna(v) else f"{v:.1%}"),
            "iteration spread": frame["iteration spread"].map(lambda v: f"{v:.1%}"),
            "threshold": frame["threshold"].map(lambda v: f"{v:.1%}"),
            "caught 9/10": frame["caught 9/10"].map(lambda v: "" if pd.isna(v) else f"{v:.1%}"),
            "host work": frame["host work"].map(lambda v: "" if pd.isna(v) else f"+{v:.1%}"),
        }
    )
    return shown.to_string(index=False)


def threshold_changes(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]], floor: float = checks.DEFAULT_FLOOR
) -> list[str]:
    """One line per case of ``after`` whose threshold differs from ``before``'s (a case new in ``after``
    included): its runs and the slowdown the gate fails, before and after, so that a history that widened
    a case is seen where it was made."""
    lines = []
    for name in sorted(after):
        runs, detects = _runs_and_threshold(after[name], floor)
        old_runs, old_detects = _runs_and_threshold(before[name], floor) if name in before else (None, None)
        if old_detects == detects:
            continue
        old = "-" if old_detects is None else f"{old_detects:.1%}"
        lines.append(f"{name}: threshold {old} -> {detects:.1%} ({old_runs or '-'} -> {runs} runs)")
    return lines


def _runs_and_threshold(entry: Mapping[str, Any], floor: float) -> tuple[int, float]:
    stored = baselines.stored_baseline(entry)
    return len(stored.run_medians_ms) + len(stored.history_ms), stored.noise(floor).threshold
