"""Every trainperf option in one table: its flag, environment variable, ini key, marker name, help
and parser; ``settings`` resolves them. Pure: no torch, no pytest."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PROFILERS = ("off", "torch", "nsys", "ncu")
DEVICES = ("auto", "cuda", "cpu")
UPGRADE_CHOICES = ("strict", "fail", "note")  # strict: fail under --perf-strict, note otherwise


class SettingError(ValueError):
    """An option value that cannot be used; the message names where it came from."""


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return parse


MAX_ITERATIONS = 100_000  # per case: beyond it a typo, not a measurement (each is kept in memory)


def _integer(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A parser of integers from ``minimum`` (to ``maximum``), whose error says the range."""
    if maximum is not None:
        expected = f"expected an integer from {minimum} to {maximum}"
    else:
        expected = "expected a positive integer" if minimum == 1 else f"expected an integer >= {minimum}"

    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(expected) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(expected)
        return value

    return parse


def _boolean(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false (1/0, yes/no, on/off)")


MAX_SECONDS = 7 * 24 * 3600.0  # a time limit beyond a week is a typo, and infinity no limit a clock can keep


def _seconds(raw: str) -> float:
    """Seconds: a positive number up to ``MAX_SECONDS`` (not inf or nan: a deadline is a clock time)."""
    expected = f"expected a positive number of seconds, at most {MAX_SECONDS:.0f}"
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(expected) from None
    if not 0 < value <= MAX_SECONDS:  # false for nan too
        raise ValueError(expected)
    return value


def _positive_number(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a positive number") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError("expected a positive number")
    return value


def _profile_cases(raw: str) -> str:
    """'all', 'failed', or comma-separated parts of case names, without blanks."""
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names:
        raise ValueError("expected all, failed, or case names separated by commas")
    return ",".join(names)


def _text(raw: str) -> str:
    if not raw.strip():
        raise ValueError("expected a non-empty path")
    return raw.strip()


@dataclass(frozen=True)
class OptionSpec:
    """One option: its command-line flag, environment variable, ini key, help and parser."""

    name: str
    flag: str
    help: str
    parse: Callable[[str], Any]
    default: Any
    is_flag: bool = False  # a store_true switch on the command line
    in_marker: bool = False  # may be set per test with @pytest.mark.trainperf(name=...)

    @property
    def env(self) -> str:
        return "TRAINPERF_" + self.name.upper()

    @property
    def ini(self) -> str:
        return "trainperf_" + self.name


OPTIONS: dict[str, OptionSpec] = {
    spec.name: spec
    for spec in (
        OptionSpec(
            "profile",
            "--profile",
            "re-run each case under a profiler and attach its Top-5 kernels: off, torch, nsys or ncu",
            _choice(PROFILERS),
            "off",
        ),
        OptionSpec(
            "profile_cases",
            "--profile-cases",
            "which cases --profile re-runs under the profiler: all, failed (those that failed a check), or case "
            "names, comma-separated (a case whose name contains one: gpt2/stack,bert)",
            _profile_cases,
            "all",
        ),
        OptionSpec(
            "profile_timeout",
            "--perf-profile-timeout",
            "seconds each profiler run of a case may take before it is stopped and noted",
            _seconds,
            900.0,
        ),
        OptionSpec(
            "update_baselines",
            "--update-baselines",
            "rewrite this device's baseline file with the cases of this run and print old -> new",
            _boolean,
            False,
            is_flag=True,
        ),
        OptionSpec("baseline_dir", "--baseline-dir", "folder of per-device baseline files", _text, "baselines"),
        OptionSpec(
            "iters",
            "--perf-iters",
            "timed training iterations per case (default: the workload's own)",
            _integer(1, MAX_ITERATIONS),
            None,
            in_marker=True,
        ),
        OptionSpec(
            "warmup",
            "--perf-warmup",
            "untimed warm-up iterations per case, for compile and autotune (default: the workload's own)",
            _integer(0, MAX_ITERATIONS),
            None,
            in_marker=True,
        ),
        OptionSpec(
            "timeout",
            "--perf-timeout",
            "seconds one run of a case may take, in the test process or a fresh one, before it is stopped "
            "and failed (default: 300 + 2 per warm-up or timed iteration)",
            _seconds,
            None,
            in_marker=True,
        ),
        OptionSpec(
            "runs",
            "--perf-runs",
            "independent runs of each case (each built, warmed up and timed afresh), whose medians give its "
            "run-to-run noise (default: 3 under --update-baselines, else 1)",
            _integer(1),
            None,
        ),
        OptionSpec(
            "confirmations",
            "--perf-confirmations",
            "at most this many cases that look slower than their baseline (or short of their speedup) are "
            "measured again, at the end of the session, before they fail; 0: none",
            _integer(0),
            10,
        ),
        OptionSpec(
            "device",
            "--perf-device",
            "where cases run: auto (cuda when present, else cpu with tiny sizes), cuda or cpu",
            _choice(DEVICES),
            "auto",
        ),
        OptionSpec(
            "report",
            "--perf-report",
            "folder for the JSON run document and the profiles of --profile (profiles default to .trainperf/)",
            _text,
            None,
        ),
        OptionSpec(
            "peak_tflops",
            "--perf-peak-tflops",
            "dense bf16 tensor-core peak in TFLOP/s for MFU (default: the vendor's figure for known GPUs)",
            _positive_number,
            None,
        ),
        OptionSpec(
            "gpu_per_worker",
            "--perf-gpu-per-worker",
            "under pytest-xdist (-n N), each worker claims a GPU of its own (CUDA_VISIBLE_DEVICES) "
            "and runs on that GPU's share of the host's cores",
            _boolean,
            False,
            is_flag=True,
        ),
        OptionSpec(
            "history",
            "--perf-history",
            "add the median of each case that passed its baseline check to that baseline's history (the "
            "last 20 runs), from which the gate measures the noise between nights; for nightly runners",
            _boolean,
            False,
            is_flag=True,
        ),
        OptionSpec(
            "calibrate",
            "--perf-calibrate",
            "the code is the code the baselines were recorded from: judge as usual, then add the median of "
            "every judged case, passed or failed, to its baseline's history, so that the gate learns the noise "
            "of new runners and nights (--perf-history adds passing cases only); not with --update-baselines",
            _boolean,
            False,
            is_flag=True,
        ),
        OptionSpec(
            "memory_snapshot",
            "--perf-memory-snapshot",
            "on CUDA, record one more iteration of each case with PyTorch's memory history: the snapshot "
            "(opens in pytorch.org/memory_viz) and a chart of allocated memory by phase, under --perf-report",
            _boolean,
            False,
            is_flag=True,
        ),
        OptionSpec(
            "upgrade_counts",
            "--perf-upgrade-counts",
            "a case whose work counts moved where torch, CUDA, cuDNN, the driver or the GPU's board differ from "
            "its recording's: fail, note (its time and kernel time still judged), or strict (fail under "
            "--perf-strict, note otherwise)",
            _choice(UPGRADE_CHOICES),
            "strict",
        ),
        OptionSpec(
            "strict",
            "--perf-strict",
            "fail a case that has no stored baseline instead of passing it with a note",
            _boolean,
            False,
            is_flag=True,
        ),
    )
}


MARKER_OPTIONS = tuple(name for name, spec in OPTIONS.items() if spec.in_marker)

PAGE_HEAD = """# Options

Every option has a command-line flag, an environment variable and an ini key (in `pytest.ini`,
`pyproject.toml`'s `[tool.pytest.ini_options]` or `tox.ini`). Precedence: command line > environment >
ini > `@pytest.mark.trainperf(...)` marker > default. An invalid value stops the run before any case
with an error that names where it came from (exit status 4). Boolean values accept `1/0`, `true/false`,
`yes/no` and `on/off`. `--profile` has the twin `--perf-profile`, the only one registered where another
plugin owns `--profile`.

This page is generated from `plugin/trainperf/config/options.py`:
`python -m trainperf.config.options > docs/options.md`.
"""


def options_page() -> str:
    """docs/options.md: the table of every option, as the options module defines them."""
    rows = ["| flag | environment | ini key | marker | default | what it does |", "|---|---|---|---|---|---|"]
    for spec in OPTIONS.values():
        flag = spec.flag if spec.is_flag else f"{spec.flag}=VALUE"
        marker = f"`{spec.name}=`" if spec.in_marker else ""
        default = "" if spec.default is None else f"`{spec.default}`"
        rows.append(f"| `{flag}` | `{spec.env}` | `{spec.ini}` | {marker} | {default} | {spec.help} |")
    return PAGE_HEAD + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(options_page(), end="")


def marker_values(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What ``@pytest.mark.trainperf(...)`` sets, by name; SettingError for a positional or unknown
    argument, which would otherwise be silently ignored."""
    usage = "@pytest.mark.trainperf takes " + ", ".join(f"{name}=N" for name in MARKER_OPTIONS)
    if args:
        raise SettingError(f"{usage}, by name only; got the positional argument(s) {', '.join(map(repr, args))}")
    unknown = sorted(set(kwargs) - set(MARKER_OPTIONS))
    if unknown:
        raise SettingError(f"{usage}; got {', '.join(unknown)}")
    return dict(kwargs)
