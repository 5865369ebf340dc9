"""The host-work check: a case whose GPU waits for the host must not make more calls per iteration
(``host_work.py``) than its stored runs did, beyond their measured noise.

Such a case runs as fast as the host issues its work, and hosts differ: such cases move between machines
by far more than a regression (research/evidence/trust.md), so their time alone catches little. The
calls the host makes per iteration are the same on a fast or a slow host; more of them cost time on
every host. The training step's calls are judged apart too: a case that reads its data in many cheap
calls hides a rise in its step's calls in the iteration's (research/evidence/h200-host-work.md). Ops
added to the step are the work check's to count (``work_check.py``), one by one. A GPU-bound case is
judged on its time alone: host work it adds hides behind the GPU.
Pure: no torch, no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from trainperf.judge import stats
from trainperf.judge.checks import DEFAULT_FLOOR, FALLBACK_THRESHOLD, HOST_BOUND_BUSY, Check, CheckName


@dataclass(frozen=True)
class StoredCalls:
    """A case's stored calls per iteration: of each recorded run, and of the runs accepted since
    (``--perf-history``, ``trainperf calibrate``); the same of the training step alone (the data's fetch
    left out; absent from entries counted before the step was counted apart); and the GPU's busy shares
    where recorded and in the runs accepted since."""

    recorded: Sequence[float] = ()
    history: Sequence[float] = ()
    gpu_busy_shares: Sequence[float] = ()
    step_recorded: Sequence[float] = ()
    step_history: Sequence[float] = ()

    def noise(self, floor: float = DEFAULT_FLOOR) -> stats.RunNoise | None:
        """The counts' noise about the recorded runs' mean; an entry recorded before calls were counted
        takes its center from the runs accepted since. None where no run was counted."""
        return _noise(self.recorded, self.history, floor)

    def step_noise(self, floor: float = DEFAULT_FLOOR) -> stats.RunNoise | None:
        """The same of the training step's counts."""
        return _noise(self.step_recorded, self.step_history, floor)


def _noise(recorded: Sequence[float], history: Sequence[float], floor: float) -> stats.RunNoise | None:
    if recorded:
        return stats.run_noise(recorded, floor, FALLBACK_THRESHOLD, 0.0, history)
    if history:
        return stats.run_noise(history, floor, FALLBACK_THRESHOLD)
    return None


def typical(calls: Sequence[float]) -> float | None:
    """The host calls per iteration of one or more runs of a case: their median; None where none counted."""
    return statistics.median(calls) if calls else None


def history_figures(calls: Sequence[float], busy: float | None, step_calls: Sequence[float] = ()) -> dict[str, float]:
    """What an accepted run adds to its case's history besides its median, by history key: its host
    calls per iteration, its training step's, and its GPU's busy share, where it has them."""
    figures = {
        "host_calls_history": typical(calls),
        "host_step_calls_history": typical(step_calls),
        "gpu_busy_history": busy,
    }
    return {key: float(value) for key, value in figures.items() if value is not None}


def waits_for_host(busy_now: float | None, stored: StoredCalls) -> bool:
    """Whether the GPU waited for the host in this run, where recorded, or in any run accepted since: a
    case near the line waits on one host and not on another, and its host work costs time where it
    waits. A run with no GPU busy share (on the CPU, or timed for too short a window to hold one of NVML's
    sample periods: ``gpu_busy``) is judged on its host work too: it may wait, and an unchanged count costs nothing."""
    return busy_now is None or any(busy < HOST_BOUND_BUSY for busy in (busy_now, *stored.gpu_busy_shares))


def threshold(stored: StoredCalls | None, busy_now: float | None, floor: float = DEFAULT_FLOOR) -> float | None:
    """The rise in the iteration's host calls beyond which the check always fails (a smaller one fails
    too where the step's own calls rise beyond theirs); None where the case is not judged on them."""
    if stored is None or not waits_for_host(busy_now, stored):
        return None
    noise = stored.noise(floor)
    return None if noise is None else noise.threshold


def host_work_check(
    case: str,
    calls: Sequence[int],
    stored: StoredCalls | None,
    busy_now: float | None,
    floor: float = DEFAULT_FLOOR,
    step_calls: Sequence[int] = (),
    fetch_calls: Sequence[int] = (),
) -> Check | None:
    """This run's calls per iteration against the stored runs', and its training step's against theirs
    where both were counted; None where not judged: nothing counted now,
    no baseline, or a GPU that did not wait for the host. Without enough counted runs (fewer than
    ``stats.MIN_RUNS``) only a rise beyond ``FALLBACK_THRESHOLD`` fails. Where the counted iterations'
    fetches (``fetch_calls``) made different numbers of calls, as worker processes' batches arriving out of
    order make them, the iteration's count fails only on a rise larger than that difference too."""
    now = typical(calls)
    if now is None or stored is None or not waits_for_host(busy_now, stored):
        return None
    noise = stored.noise(floor)
    if noise is None:
        return Check(
            CheckName.HOST_WORK,
            None,
            f"{case}: {now:.0f} host calls per iteration, none counted where recorded: count them with "
            "--update-baselines, or add runs of the recorded code with --perf-history",
        )
    parts = [_judged_part("host calls per iteration", now, noise, fetch_spread(fetch_calls))]
    step_now, step_noise = typical(step_calls), stored.step_noise(floor)
    if step_now is not None and step_noise is not None:
        parts.append(_judged_part("of them in the training step", step_now, step_noise))
    figures = "; ".join(text for _, text in parts)
    if any(rose for rose, _ in parts):
        return Check(
            CheckName.HOST_WORK,
            False,
            f"{case}: more host work than baseline: {figures}; {_why_judged(busy_now, stored)}",
        )
    return Check(CheckName.HOST_WORK, True, f"{case}: {figures}")


def _why_judged(busy_now: float | None, stored: StoredCalls) -> str:
    """Which of ``waits_for_host``'s reasons holds, in words: a case judged on an old run's low busy share
    or on no share at all must not read as one that waits for the host now."""
    if busy_now is not None and busy_now < HOST_BOUND_BUSY:
        return (
            f"its GPU was busy {busy_now:.0%} of the time: it waits for the host, so the host's added work "
            "costs time on any machine"
        )
    waited = sum(busy < HOST_BOUND_BUSY for busy in stored.gpu_busy_shares)
    if waited:
        return (
            f"its GPU waited for the host in {waited} of its {len(stored.gpu_busy_shares)} stored runs, so the "
            "host's added work costs time on hosts like those"
        )
    return "this run's GPU busy share was not measured, so its host work is judged as if the GPU waited"


def fetch_spread(fetch_calls: Sequence[int]) -> int:
    """How many calls the counted iterations' fetches differed by: 0 where they agreed or one was counted."""
    return max(fetch_calls) - min(fetch_calls) if fetch_calls else 0


def _judged_part(what: str, now: float, noise: stats.RunNoise, varied: int = 0) -> tuple[bool, str]:
    """Whether one count rose beyond its noise and beyond ``varied`` calls (what this run's own counts
    differed by), and its figures: this run's, the stored, the allowance."""
    delta = stats.relative_change(now, noise.center_ms)
    if noise.spread is None:
        allowance = (
            f"{noise.runs} run(s) counted, too few to measure their noise: more counts beyond {noise.threshold:.0%}"
        )
    else:
        allowance = f"noise {noise.spread:.1%} over {noise.runs} runs: more counts beyond {noise.threshold:.1%}"
    if varied:
        allowance += f" and beyond {varied} calls, what this run's fetches differed by"
    rose = delta > noise.threshold and now - noise.center_ms > varied
    return rose, f"{now:.0f} {what} vs {noise.center_ms:.0f} stored ({delta:+.1%}); {allowance}"
