"""Every trainperf option resolved in one place, into the session's ``Settings``.

Precedence: command line > environment > ini > marker > default. An invalid value's error names the
source it came from (``--perf-iters``, ``TRAINPERF_ITERS``, ini ``trainperf_iters`` or the marker).
Pure: the pytest wiring in ``plugin.py`` reads the raw values and hands them over; the table of options
is ``options.OPTIONS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainperf.config.options import MARKER_OPTIONS, OPTIONS, OptionSpec, SettingError, marker_values

UPDATE_RUNS = 3  # independent runs of each case that --update-baselines records


@dataclass(frozen=True)
class Resolved:
    value: Any
    source: str  # human-readable origin, e.g. "environment TRAINPERF_ITERS"


def resolve(
    spec: OptionSpec,
    *,
    cli: Any = None,
    environ: Mapping[str, str] | None = None,
    ini: str | None = None,
    marker: Any = None,
) -> Resolved:
    """The option's value from the first source that sets it, parsed; SettingError names the source."""
    environ = environ or {}
    candidates: list[tuple[str, Any]] = [
        (f"command line {spec.flag}", cli),
        (f"environment {spec.env}", environ.get(spec.env)),
        (f"ini {spec.ini}", ini or None),
        (f"marker trainperf({spec.name}=...)", marker if spec.in_marker else None),
    ]
    for source, raw in candidates:
        if raw is None:
            continue
        if isinstance(raw, bool) and spec.is_flag:
            return Resolved(raw, source)
        try:
            return Resolved(spec.parse(str(raw)), source)
        except ValueError as error:
            raise SettingError(f"invalid value {raw!r} for {spec.name} from {source}: {error}") from None
    return Resolved(spec.default, "default")


@dataclass(frozen=True)
class Settings:
    """Session-wide settings, read once."""

    profile: str
    update_baselines: bool
    baseline_dir: Path
    iters: int | None
    warmup: int | None
    device: str
    report: Path | None
    strict: bool
    sources: Mapping[str, str]
    peak_tflops: float | None = None
    profile_timeout: float = 900.0
    profile_cases: str = "all"  # all, failed, or comma-separated parts of case names
    gpu_per_worker: bool = False
    runs: int | None = None
    confirmations: int = 10
    history: bool = False
    calibrate: bool = False
    memory_snapshot: bool = False
    timeout: float | None = None  # seconds per in-process run of a case; None: time_limit.default_limit_s
    upgrade_counts: str = "strict"  # a count moved with an upgrade: fail, note, or strict (as --perf-strict)

    def values(self) -> dict[str, Any]:
        """Each option's value as the session uses it, JSON-ready (paths as text), for the run document."""
        found = {name: getattr(self, name) for name in self.sources}
        return {name: str(value) if isinstance(value, Path) else value for name, value in found.items()}

    @property
    def upgrade_fails(self) -> bool:
        """Whether a work count that moved with an upgrade fails its case (``--perf-upgrade-counts``)."""
        return self.upgrade_counts == "fail" or (self.upgrade_counts == "strict" and self.strict)

    @property
    def runs_per_case(self) -> int:
        """Independent runs of each case: 3 when recording baselines (their noise is measured), else 1."""
        if self.runs is not None:
            return self.runs
        return UPDATE_RUNS if self.update_baselines else 1


@dataclass(frozen=True)
class CaseOptions:
    """What one test's case runs with where the session or the test's ``trainperf`` marker sets it; None
    leaves the workload's own iterations and the default time limit."""

    iters: int | None = None
    warmup: int | None = None
    timeout: float | None = None


def case_options(settings: Settings, marker_args: tuple[Any, ...], marker_kwargs: Mapping[str, Any]) -> CaseOptions:
    """The session's value of each marker option (command line, environment, ini), else the marker's;
    SettingError names a bad marker argument."""
    marked = marker_values(marker_args, marker_kwargs)
    found = {}
    for name in MARKER_OPTIONS:
        session = getattr(settings, name)
        found[name] = session if session is not None else resolve(OPTIONS[name], marker=marked.get(name)).value
    return CaseOptions(**found)


def build_settings(values: Mapping[str, Resolved], rootdir: Path) -> Settings:
    """Settings from resolved values; relative paths are taken from the rootdir."""
    if values["calibrate"].value and values["update_baselines"].value:
        raise SettingError(
            f"--perf-calibrate (from {values['calibrate'].source}) judges against the stored baselines; "
            f"it cannot run with --update-baselines (from {values['update_baselines'].source}), which replaces them"
        )
    baseline_dir = Path(values["baseline_dir"].value)
    report = values["report"].value
    return Settings(
        profile=values["profile"].value,
        update_baselines=values["update_baselines"].value,
        baseline_dir=baseline_dir if baseline_dir.is_absolute() else rootdir / baseline_dir,
        iters=values["iters"].value,
        warmup=values["warmup"].value,
        device=values["device"].value,
        report=None if report is None else Path(report),
        strict=values["strict"].value,
        peak_tflops=values["peak_tflops"].value,
        profile_timeout=values["profile_timeout"].value,
        profile_cases=values["profile_cases"].value,
        gpu_per_worker=values["gpu_per_worker"].value,
        runs=values["runs"].value,
        confirmations=values["confirmations"].value,
        history=values["history"].value,
        calibrate=values["calibrate"].value,
        memory_snapshot=values["memory_snapshot"].value,
        timeout=values["timeout"].value,
        upgrade_counts=values["upgrade_counts"].value,
        sources={name: resolved.source for name, resolved in values.items()},
    )
