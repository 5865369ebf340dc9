"""Per-device baseline files: ``<dir>/<device-slug>.json``.

Pure: no torch, no pytest. Reading validates the schema and names the file in every error; writing
merges under a lock and replaces the file atomically, so a crash mid-write leaves the old file whole
and two concurrent updates lose no entry.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainperf.judge import checks, host_work_check, policy
from trainperf.store import locked_file

SCHEMA_VERSION = 2  # 2: each entry keeps the work counted in its recorded runs ("work")
READABLE_VERSIONS = (1, SCHEMA_VERSION)  # a file of version 1 loads; its entries lack the work
READABLE_TEXT = " and ".join(map(str, READABLE_VERSIONS))
# what an entry recorded before its work was counted lacks, as a note words it
WORK_FIGURES = "ATen ops, synchronizations, copies, kernels and kernel time per iteration"
REQUIRED_ENTRY_KEYS = ("samples_ms", "summary", "accuracy", "peak_memory_bytes", "fingerprint", "date")
# accepted nightly runs kept per case under --perf-history, as dashboards keep a window of past nights
HISTORY_RUNS = 20
# the host's calls per iteration and its training step's, of each recorded run and of the runs accepted since
HOST_CALLS_KEYS = ("host_calls", "host_calls_history", "host_step_calls", "host_step_calls_history")


class BaselineError(Exception):
    """A baseline file that cannot be used; the message names the file and what to do."""


class InvalidEntry(BaselineError):
    """A recorded entry the file's schema refuses (a count below zero, say): that case is not written,
    and the file stays one that loads."""


@dataclass(frozen=True)
class Change:
    """One case's baseline before and after an update (None when absent), with the new entry's run
    medians (one run far from the others is what widens the case's gate), how many accepted runs of the
    old entry's history the new one no longer holds (its noise is measured again from its own), and the
    slowdown each entry lets the gate catch (``detects``): a recording on a busy host widens it; and
    whether the new entry's time awaits calibration (``policy.host_paced_shares``)."""

    case: str
    old_median_ms: float | None
    new_median_ms: float | None
    new_runs_ms: tuple[float, ...] = ()
    dropped_history_runs: int = 0
    old_detects: float | None = None
    new_detects: float | None = None
    awaits_calibration: bool = False  # on a GPU, the new entry's time is not judged until calibrated

    @property
    def delta(self) -> float | None:
        if self.old_median_ms is None or self.new_median_ms is None:
            return None
        return (self.new_median_ms - self.old_median_ms) / self.old_median_ms


def baseline_path(directory: str | Path, device_slug: str) -> Path:
    return Path(directory) / f"{device_slug}.json"


def followed(path: Path) -> Path:
    """The file a baseline path names: itself, or where its symbolic links lead (read and written
    through, so that a link into a shared folder keeps its target up to date); a link that loops is a
    file that cannot be used."""
    if not path.is_symlink():
        return path
    try:
        path.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BaselineError(
                f"{path}: a symbolic link that loops; point it at a baseline file or remove it"
            ) from None
    return Path(os.path.realpath(path))  # a link to no file yet: recording creates its target


def load(path: Path, folder_source: str = "--baseline-dir") -> dict[str, dict[str, Any]]:
    """Cases stored in ``path`` (empty when the file does not exist); ``folder_source`` says where the
    folder was given, for the error where it is a file."""
    if path.parent.exists() and not path.parent.is_dir():
        raise BaselineError(f"{path.parent}: a file is there, not a folder of baseline files ({folder_source})")
    target = followed(path)
    if not target.exists():
        return {}
    try:
        # NaN and Infinity read as text: the schema then names the field that holds one
        document = json.loads(target.read_text(encoding="utf-8"), parse_constant=str)
    except OSError as error:  # a directory in its place, no permission to read it
        raise BaselineError(f"{path}: cannot read it ({error.strerror or error})") from None
    except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, too deep, an integer too long
        reason = str(error).splitlines()[0][:200]
        raise BaselineError(f"{path}: not a valid baseline file ({reason}); restore it from git or delete it") from None
    return _validated(path, document)


def _validated(path: Path, document: Any) -> dict[str, dict[str, Any]]:
    """The file's cases, checked against its published JSON Schema (``docs/schema``); the first error
    found names the file, the case and the field, in the schema's words."""
    problem = _first_problem(document)
    if problem is not None:
        raise BaselineError(f"{path}: {problem}")
    cases: dict[str, dict[str, Any]] = document["cases"]
    return cases


def _first_problem(document: Any) -> str | None:
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(document))
    return None if error is None else _problem(error, document)


def _problem(error: Any, document: Any) -> str:
    """What is wrong, in the words of the schema's descriptions."""
    where = list(error.absolute_path)
    if not isinstance(document, dict):
        return "expected a JSON object at the top level"
    if where[:1] == ["schema_version"] or (error.validator == "required" and "schema_version" not in document):
        version = document.get("schema_version")
        return (
            f"unknown schema_version {version!r} (this trainperf reads {READABLE_TEXT}); "
            "update trainperf or re-record with --update-baselines after moving the file away"
        )
    if where[:1] == ["device"]:
        return "'device' must be the device's slug, as text"
    if len(where) < 2:
        return "'cases' must be an object of case name -> entry"
    name = where[1]
    if len(where) == 2:
        if error.validator == "required":
            entry = document["cases"][name]
            return f"case {name!r} lacks {', '.join(k for k in REQUIRED_ENTRY_KEYS if k not in entry)}"
        return f"case {name!r} must be an object"
    field = where[2]
    if field == "summary" and not (len(where) == 3 and error.validator == "type"):
        return f"case {name!r} needs 'summary.median' as a positive number"
    return f"case {name!r} needs {field!r} as {_described(field)}"


SCHEMA_FILE = Path(__file__).with_name("baseline-file.schema.json")  # published as docs/schema/


@functools.cache
def _validator() -> Any:
    import jsonschema  # on first use: a session without a baseline file does not pay its import

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _described(field: str) -> str:
    """The schema's description of an entry's field: 'a non-empty list of positive numbers'."""
    schema = _validator().schema
    spec = schema["$defs"]["entry"]["properties"].get(field, {})
    if "description" not in spec and "$ref" in spec:
        spec = schema["$defs"][spec["$ref"].rsplit("/", 1)[1]]
    return str(spec.get("description", "the schema in docs/schema/baseline-file.schema.json says"))


def lacking_work(path: Path, cases: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One line naming the stored cases recorded before their work was counted (None where every case
    has it): their work is not judged until they are recorded again."""
    lacking = sorted(name for name, entry in cases.items() if not entry.get("work"))
    if not lacking:
        return None
    shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
    return (
        f"{path}: {len(lacking)} of {len(cases)} cases lack the {WORK_FIGURES} ({shown}): their work is not "
        "judged until they are recorded again with --update-baselines"
    )


def update(path: Path, device_slug: str, entries: Mapping[str, dict[str, Any]]) -> list[Change]:
    """Merge ``entries`` into the file under a lock and replace it atomically; return the changes. Entries
    the schema refuses raise InvalidEntry and leave the file as it was: a file that no longer loads would
    stop every later run."""
    problem = _first_problem({"schema_version": SCHEMA_VERSION, "device": device_slug, "cases": dict(entries)})
    if problem is not None:
        raise InvalidEntry(f"{path}: not written: {problem}")
    path.parent.mkdir(parents=True, exist_ok=True)
    target = followed(path)
    with locked_file.locked(target):
        old = load(path)
        merged = {**old, **entries}
        document = {"schema_version": SCHEMA_VERSION, "device": device_slug, "cases": dict(sorted(merged.items()))}
        locked_file.atomic_write(target, json.dumps(document, indent=1) + "\n")
    return [_change(name, old.get(name), entry) for name, entry in sorted(entries.items())]


def add_history(
    path: Path,
    device_slug: str,
    accepted: Mapping[str, float],
    figures: Mapping[str, Mapping[str, float]] | None = None,
    board: str | None = None,
) -> list[str]:
    """Append each accepted run's median to its case's ``history_ms``, and each further figure of that run
    (``figures``, by history key: ``host_calls_history``, ``host_step_calls_history``,
    ``gpu_busy_history``; a case only where it has one) to that list, each
    kept to the last ``HISTORY_RUNS``, under the lock; return the cases added. ``board``, the GPU board's
    part number, goes to ``history_boards`` beside its median. A case the file does not hold is left
    out: its history starts with its recording."""
    figures = figures or {}
    target = followed(path)
    with locked_file.locked(target):
        cases = load(path)
        added = sorted(name for name in accepted if name in cases)
        for name in added:
            boards = history_boards(cases[name])
            cases[name]["history_ms"] = [*history(cases[name]), accepted[name]][-HISTORY_RUNS:]
            if board is not None or "history_boards" in cases[name]:
                cases[name]["history_boards"] = [*boards, board][-HISTORY_RUNS:]
            for key, values in figures.items():
                if name in values:
                    cases[name][key] = [*cases[name].get(key, []), values[name]][-HISTORY_RUNS:]
        if added:
            document = {"schema_version": SCHEMA_VERSION, "device": device_slug, "cases": cases}
            locked_file.atomic_write(target, json.dumps(document, indent=1) + "\n")
    return added


def history(entry: Mapping[str, Any]) -> list[float]:
    """The medians of the accepted runs kept since the entry was recorded."""
    return [float(x) for x in entry.get("history_ms", [])]


def history_boards(entry: Mapping[str, Any]) -> list[str | None]:
    """The board part number of each run in ``history_ms``, in its order: None for the runs added before
    the part was kept. On H200s the part told the kernels' slow machines from the fast ones
    (research/evidence/h200-gpu-bound-noise.md); kept so that the history can say whether it always does."""
    runs = len(history(entry))
    kept = list(entry.get("history_boards", []))[-runs:] if runs else []
    return [None] * (runs - len(kept)) + kept


def changes_between(old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]]) -> list[Change]:
    """The cases whose entry differs between two loads of one file (an xdist run's workers each wrote
    some of them)."""
    names = sorted(name for name in {*old, *new} if old.get(name) != new.get(name))
    return [_change(name, old.get(name), new.get(name)) for name in names]


def _change(name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Change:
    runs = () if new is None else tuple(run_medians(new))
    dropped = len(history(old)) if old is not None and new is not None and not history(new) else 0
    awaits = new is not None and awaits_calibration(new)
    return Change(name, _median(old), _median(new), runs, dropped, detects(old), detects(new), awaits)


def awaits_calibration(entry: Mapping[str, Any]) -> bool:
    """Whether a GPU's entry has its time judged only once runs of later sessions are in its history
    (``policy.host_paced_shares``); a CPU's entries keep no busy share."""
    return bool(policy.host_paced_shares(stored_baseline(entry), stored_calls(entry)))


def stored_baseline(entry: Mapping[str, Any]) -> checks.Baseline:
    """The figures the gate judges a case's time by."""
    host = entry.get("host", {})
    return checks.Baseline(
        [float(x) for x in entry["samples_ms"]],
        run_medians(entry),
        history(entry),
        host.get("host_dispatch_us"),
        host.get("mean_sm_clock_mhz"),
    )


def stored_calls(entry: Mapping[str, Any]) -> host_work_check.StoredCalls:
    """The host calls per iteration the gate judges a case's host work by, with the GPU's busy shares."""
    recorded = entry.get("host", {}).get("gpu_busy_share")
    busy = [*([] if recorded is None else [recorded]), *entry.get("gpu_busy_history", [])]
    return host_work_check.StoredCalls(
        entry.get("host_calls", []),
        entry.get("host_calls_history", []),
        busy,
        step_recorded=entry.get("host_step_calls", []),
        step_history=entry.get("host_step_calls_history", []),
    )


def detects(entry: Mapping[str, Any] | None) -> float | None:
    """The smallest slowdown the gate fails at the entry's measured noise and the default floor (a case's
    own ``slowdown_floor`` raises it); None without an entry."""
    return None if entry is None else stored_baseline(entry).noise().threshold


def _median(entry: dict[str, Any] | None) -> float | None:
    """The entry's center: the mean of its run medians, as the gate takes it."""
    return None if entry is None else statistics.fmean(run_medians(entry))


def run_medians(entry: Mapping[str, Any]) -> list[float]:
    """The median of each independent run the entry holds; an entry recorded before runs were kept apart
    holds one, the median of its samples."""
    return [float(x) for x in entry.get("run_medians_ms") or [entry["summary"]["median"]]]


def runs_listed(change: Change) -> str:
    """'70.220, 31.360, 30.350': the new entry's run medians in ms."""
    return ", ".join(f"{x:.3f}" for x in change.new_runs_ms)


def format_changes(changes: list[Change]) -> list[str]:
    """Lines 'case: old -> new (delta)' for the terminal, naming the accepted runs a re-recording
    dropped: until as many nights have passed again, the case's noise stands on fewer runs."""
    lines = []
    for change in changes:
        old = "new" if change.old_median_ms is None else f"{change.old_median_ms:.3f} ms"
        new = "removed" if change.new_median_ms is None else f"{change.new_median_ms:.3f} ms"
        delta = "" if change.delta is None else f" ({change.delta:+.1%})"
        runs = f", runs {runs_listed(change)} ms" if len(change.new_runs_ms) > 1 else ""
        caught = f", threshold {detects_listed(change)}" if change.new_detects is not None else ""
        lines.append(f"{change.case}: {old} -> {new}{delta}{runs}{caught}{_dropped_text(change.dropped_history_runs)}")
    return lines


# what a case's threshold adds where its time is not judged until calibrated (trainperf noise says it too)
AWAITS = "its time awaits calibration: its GPU waited for the host"


def detects_listed(change: Change) -> str:
    """'3.0% -> 55.6%' (or '3.0%' for a new case, '' for a removed one): the slowdown the gate catches,
    before and after, and whether the new entry's time awaits calibration."""
    if change.new_detects is None:
        return ""
    new = f"{change.new_detects:.1%}" + f" ({AWAITS})" * change.awaits_calibration
    return new if change.old_detects is None else f"{change.old_detects:.1%} -> {new}"


def _dropped_text(runs: int) -> str:
    """'; 7 accepted runs of its history dropped: ...' where a re-recording dropped any."""
    if not runs:
        return ""
    return (
        f"; {runs} accepted run{'s' * (runs > 1)} of its history dropped: "
        "its noise is measured from this recording until --perf-history adds nights again"
    )
