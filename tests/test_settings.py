import json
import re
from pathlib import Path

import pytest
from trainperf.config.options import OPTIONS, SettingError, marker_values
from trainperf.config.settings import build_settings, resolve


def test_precedence_command_line_environment_ini_marker_default() -> None:
    spec = OPTIONS["iters"]
    env = {"TRAINPERF_ITERS": "6"}
    assert resolve(spec, cli="7", environ=env, ini="5", marker=4).value == 7
    assert resolve(spec, environ=env, ini="5", marker=4).source == "environment TRAINPERF_ITERS"
    assert resolve(spec, ini="5", marker=4).value == 5
    assert resolve(spec, marker=4).value == 4
    assert resolve(spec).source == "default"


def test_marker_is_ignored_for_session_options() -> None:
    assert resolve(OPTIONS["device"], marker="cuda").value == "auto"


@pytest.mark.parametrize(
    ("name", "raw", "source"),
    [("iters", "0", "command line --perf-iters"), ("device", "tpu", "command line --perf-device")],
)
def test_invalid_values_name_their_source(name: str, raw: str, source: str) -> None:
    with pytest.raises(SettingError, match=f"invalid value '{raw}' for {name} from {source}"):
        resolve(OPTIONS[name], cli=raw)


def test_boolean_words_from_environment() -> None:
    spec = OPTIONS["strict"]
    assert resolve(spec, environ={"TRAINPERF_STRICT": "yes"}).value is True
    assert resolve(spec, environ={"TRAINPERF_STRICT": "0"}).value is False
    with pytest.raises(SettingError, match="TRAINPERF_STRICT"):
        resolve(spec, environ={"TRAINPERF_STRICT": "maybe"})


def test_the_values_a_run_document_keeps_name_every_option_and_read_back_as_json(tmp_path: Path) -> None:
    values = {name: resolve(spec) for name, spec in OPTIONS.items()}
    values["profile"] = resolve(OPTIONS["profile"], cli="ncu")
    kept = build_settings(values, tmp_path).values()
    assert set(kept) == set(OPTIONS) and json.loads(json.dumps(kept)) == kept
    assert kept["profile"] == "ncu" and kept["baseline_dir"] == str(tmp_path / "baselines")


def test_relative_baseline_dir_is_taken_from_rootdir(tmp_path: Path) -> None:
    values = {name: resolve(spec) for name, spec in OPTIONS.items()}
    settings = build_settings(values, tmp_path)
    assert settings.baseline_dir == tmp_path / "baselines"
    assert settings.profile == "off" and settings.report is None


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((3, 1), {}, "by name only; got the positional argument(s) 3, 1"),
        ((), {"iter": 3}, "@pytest.mark.trainperf takes iters=N, warmup=N, timeout=N; got iter"),
    ],
)
def test_a_marker_argument_the_plugin_would_ignore_is_an_error(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(SettingError, match=re.escape(message)):
        marker_values(args, kwargs)
    assert marker_values((), {"iters": 3}) == {"iters": 3}


def test_calibrating_against_baselines_it_would_replace_is_an_error(tmp_path: Path) -> None:
    values = {name: resolve(spec) for name, spec in OPTIONS.items()}
    values["calibrate"] = resolve(OPTIONS["calibrate"], cli=True)
    values["update_baselines"] = resolve(OPTIONS["update_baselines"], environ={"TRAINPERF_UPDATE_BASELINES": "1"})
    message = (
        "--perf-calibrate (from command line --perf-calibrate) judges against the stored baselines; it cannot "
        "run with --update-baselines (from environment TRAINPERF_UPDATE_BASELINES)"
    )
    with pytest.raises(SettingError, match=re.escape(message)):
        build_settings(values, tmp_path)


@pytest.mark.parametrize("raw", ["inf", "1e300", "nan", "-5", "0"])
def test_a_time_limit_is_finite_seconds_from_any_source(raw: str) -> None:
    """An infinite or astronomical timeout was accepted and then failed every case with an OverflowError
    of the platform's time_t: it is refused where it is given, naming the source."""
    for source in ({"cli": raw}, {"environ": {"TRAINPERF_TIMEOUT": raw}}, {"ini": raw}):
        with pytest.raises(SettingError, match="expected a positive number of seconds, at most 604800"):
            resolve(OPTIONS["timeout"], **source)  # type: ignore[arg-type]
    assert resolve(OPTIONS["timeout"], cli="604800").value == 604800.0
    with pytest.raises(SettingError, match="expected a positive number"):
        resolve(OPTIONS["peak_tflops"], cli="inf")


@pytest.mark.parametrize("source", ["command line", "environment", "ini", "default"])
def test_pytest_and_the_trainperf_command_find_the_same_baseline_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """``trainperf record`` and ``calibrate`` write where a pytest session started in the same folder reads."""
    from trainperf.cli.main import _baseline_dir
    from trainperf.hooks.plugin import SESSION_KEY

    monkeypatch.delenv("TRAINPERF_BASELINE_DIR", raising=False)
    pytester.makeini("[pytest]\ntrainperf_baseline_dir = from_ini\n" if source == "ini" else "[pytest]\n")
    monkeypatch.chdir(pytester.mkdir("below"))  # both take a relative folder from the rootdir, not from here
    args, given = [], None
    if source == "command line":
        args, given = ["--baseline-dir=from_cli"], "from_cli"
    elif source == "environment":
        monkeypatch.setenv("TRAINPERF_BASELINE_DIR", "from_env")
    config = pytester.parseconfigure(*args)
    expected = {"command line": "from_cli", "environment": "from_env", "ini": "from_ini", "default": "baselines"}
    assert config.stash[SESSION_KEY].settings.baseline_dir == pytester.path / expected[source]
    assert _baseline_dir(given) == pytester.path / expected[source]
