import json
import multiprocessing
import os
import re
import stat
import statistics
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from trainperf.store import baselines, locked_file


def entry(median: float) -> dict:
    return {
        "samples_ms": [median, median * 1.01],
        "summary": {"median": median},
        "accuracy": {"metric": "accuracy", "value": 0.9},
        "peak_memory_bytes": None,
        "fingerprint": {"slug": "dev"},
        "date": "2026-11-22T00:00:00+00:00",
    }


def test_missing_file_loads_empty(tmp_path: Path) -> None:
    assert baselines.load(tmp_path / "dev.json") == {}


def test_update_writes_merges_and_reports_changes(tmp_path: Path) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    first = baselines.update(path, "dev", {"w/a": entry(10.0)})
    assert first == [baselines.Change("w/a", None, 10.0, (10.0,), new_detects=0.10)]  # one run: the fallback
    second = baselines.update(path, "dev", {"w/b": entry(5.0), "w/a": entry(11.0)})
    assert [c.case for c in second] == ["w/a", "w/b"]
    assert second[0].delta == pytest.approx(0.1)
    assert set(baselines.load(path)) == {"w/a", "w/b"}
    assert baselines.format_changes(second) == [
        "w/a: 10.000 ms -> 11.000 ms (+10.0%), threshold 10.0% -> 10.0%",
        "w/b: new -> 5.000 ms, threshold 10.0%",
    ]


def test_an_entry_the_schema_refuses_is_not_written_and_the_file_still_loads(tmp_path: Path) -> None:
    """A count below zero (a profile that lost its GPU activity) once went into a file that then failed
    every later load; the entry is refused and the file keeps what it had."""
    path = baselines.baseline_path(tmp_path, "dev")
    baselines.update(path, "dev", {"w/a": entry(10.0)})
    lost = {**entry(5.0), "work": [{"ops": 620, "syncs": -1, "copies": 0, "kernels": 0, "kernel_ms": 0.0}]}
    with pytest.raises(baselines.InvalidEntry, match=r"dev.json: not written: case 'w/b' needs 'work' as "):
        baselines.update(path, "dev", {"w/b": lost})
    assert set(baselines.load(path)) == {"w/a"}


def test_changes_show_each_recorded_run_so_that_a_stray_run_stands_out(tmp_path: Path) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    recorded = {**entry(44.0), "run_medians_ms": [70.22, 31.36, 30.35]}
    (change,) = baselines.update(path, "dev", {"r/amp": recorded})
    assert change.new_median_ms == pytest.approx(43.9767, abs=1e-4)
    assert baselines.format_changes([change]) == [
        "r/amp: new -> 43.977 ms, runs 70.220, 31.360, 30.350 ms, threshold 415.7%"
    ]  # t(0.99, 2 df) 6.965 x 51.7% (the runs' spread) x sqrt(1 + 1/3): blind to all but gross slowdowns


def test_a_re_recording_says_how_many_accepted_runs_of_its_history_it_dropped(tmp_path: Path) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    baselines.update(path, "dev", {"w/a": entry(10.0)})
    baselines.add_history(path, "dev", {"w/a": 10.2})
    baselines.add_history(path, "dev", {"w/a": 9.9})
    (change,) = baselines.update(path, "dev", {"w/a": entry(10.5)})
    assert change.dropped_history_runs == 2
    assert "history_ms" not in baselines.load(path)["w/a"]
    assert baselines.format_changes([change]) == [
        "w/a: 10.000 ms -> 10.500 ms (+5.0%), threshold 12.7% -> 10.0%; 2 accepted runs of its history dropped: "
        "its noise is measured from this recording until --perf-history adds nights again"
    ]


def recorded(run_medians: list[float], samples: list[float]) -> dict:
    """An entry of three runs: their medians, and the same iterations in each."""
    return {**entry(statistics.median(run_medians)), "run_medians_ms": run_medians, "samples_ms": samples * 3}


def test_a_recording_whose_iterations_spread_widely_shows_the_slowdown_it_lets_through() -> None:
    """Equal run medians of steady iterations judge at the floor; the same medians of iterations that spread
    (a busy host while recording) judge far wider, and the change says so before anyone merges it."""
    steady = recorded([10.0, 10.0, 10.0], [10.0] * 8)
    busy = recorded([10.0, 10.0, 10.0], [8.0] * 4 + [12.0] * 4)
    (change,) = baselines.changes_between({"w/a": steady}, {"w/a": busy})
    assert change.old_detects == pytest.approx(0.03)
    spread = (12.0 - 8.0) / 1.349 / 10.0  # IQR / 1.349 / median of each run's iterations
    assert change.new_detects == pytest.approx(scipy_stats.t.ppf(0.99, 2) * spread * (4 / 3) ** 0.5)
    assert baselines.format_changes([change]) == [
        "w/a: 10.000 ms -> 10.000 ms (+0.0%), runs 10.000, 10.000, 10.000 ms, "
        f"threshold 3.0% -> {change.new_detects:.1%}"
    ]


def test_history_added_to_an_entry_drops_nothing() -> None:
    old = {"w/a": {**entry(10.0), "history_ms": [10.2]}}
    new = {"w/a": {**entry(10.0), "history_ms": [10.2, 9.9]}}
    (change,) = baselines.changes_between(old, new)
    assert change.dropped_history_runs == 0
    assert baselines.format_changes([change]) == ["w/a: 10.000 ms -> 10.000 ms (+0.0%), threshold 10.0% -> 12.7%"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "not a valid baseline file"),
        ("[]", "expected a JSON object"),
        ('{"schema_version": 3, "cases": {}}', "unknown schema_version 3"),
        ('{"schema_version": 1}', "'cases' must be an object"),
        ('{"schema_version": 2, "device": 7, "cases": {}}', "'device' must be the device's slug"),
        ('{"schema_version": 1, "cases": {"w/a": {}}}', "lacks samples_ms"),
    ],
)
def test_unusable_files_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "dev.json"
    path.write_text(text)
    with pytest.raises(baselines.BaselineError, match=expected) as error:
        baselines.load(path)
    assert str(path) in str(error.value)


def test_corrupt_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text("{ truncated")
    with pytest.raises(baselines.BaselineError):
        baselines.update(path, "dev", {"w/a": entry(1.0)})
    assert path.read_text() == "{ truncated"


def test_interrupted_write_leaves_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    baselines.update(path, "dev", {"w/a": entry(10.0)})
    before = path.read_text()

    def crash(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(locked_file.os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        baselines.update(path, "dev", {"w/a": entry(20.0)})
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def _write_one(args: tuple[str, int]) -> None:
    directory, index = args
    baselines.update(baselines.baseline_path(directory, "dev"), "dev", {f"w/{index}": entry(1.0 + index)})


def test_concurrent_updates_lose_no_entry(tmp_path: Path) -> None:
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_write_one, [(str(tmp_path), i) for i in range(16)])
    assert set(baselines.load(baselines.baseline_path(tmp_path, "dev"))) == {f"w/{i}" for i in range(16)}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(
    st.one_of(
        st.text(),
        st.binary().map(lambda b: b.decode("latin-1")),
        st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)).map(
            json.dumps
        ),
    )
)
def test_any_malformed_content_raises_baseline_error_only(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        cases = baselines.load(path)
    except baselines.BaselineError as error:
        assert str(path) in str(error)
    else:
        assert all(entry["samples_ms"] for entry in cases.values())


def test_run_medians_are_kept_and_an_older_entry_holds_one(tmp_path: Path) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    baselines.update(path, "dev", {"w/a": {**entry(10.0), "run_medians_ms": [9.9, 10.0, 10.4]}, "w/old": entry(5.0)})
    stored = baselines.load(path)
    assert baselines.run_medians(stored["w/a"]) == [9.9, 10.0, 10.4]
    assert baselines.run_medians(stored["w/old"]) == [5.0]  # recorded before runs were kept apart
    changes = baselines.update(path, "dev", {"w/a": {**entry(11.0), "run_medians_ms": [11.0, 11.1, 10.9]}})
    assert changes[0].old_median_ms == pytest.approx(10.1) and changes[0].new_median_ms == pytest.approx(11.0)


def test_run_medians_that_are_not_positive_numbers_name_the_case(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    bad = {**entry(10.0), "run_medians_ms": [10.0, -1]}
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": bad}}))
    with pytest.raises(baselines.BaselineError, match="case 'w/a' needs 'run_medians_ms'"):
        baselines.load(path)


def test_written_file_has_the_usual_mode_and_keeps_a_chosen_one(tmp_path: Path) -> None:
    """A new file gets what ``open()`` would give it under the umask; a file's own mode survives an update."""
    path = baselines.baseline_path(tmp_path, "dev")
    previous = os.umask(0o022)
    try:
        baselines.update(path, "dev", {"w/a": entry(10.0)})
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        path.chmod(0o664)
        baselines.update(path, "dev", {"w/b": entry(5.0)})
        assert stat.S_IMODE(path.stat().st_mode) == 0o664
    finally:
        os.umask(previous)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda path: path.mkdir(), "cannot read it"),  # a directory where the file should be
        (lambda path: path.write_text("[" * 100_000), "not a valid baseline file"),  # too deep for json
        (lambda path: path.write_text('{"schema_version": 1, "cases": {}, "x": ' + "9" * 5000 + "}"), "not a valid"),
        (lambda path: path.write_bytes(b"\xff\xfe"), "not a valid baseline file"),
    ],
    ids=["directory", "nested", "huge-integer", "not-utf8"],
)
def test_unreadable_files_are_one_baseline_error_naming_the_file(tmp_path: Path, make, expected: str) -> None:
    path = tmp_path / "dev.json"
    make(path)
    with pytest.raises(baselines.BaselineError, match=re.escape(f"{path}: {expected}")):
        baselines.load(path)


@pytest.mark.parametrize(
    ("summary", "field"),
    [("fast", "summary"), ({}, "summary.median"), ({"median": float("nan")}, "summary.median")],
)
def test_a_stored_summary_that_is_not_figures_names_the_case_and_field(
    tmp_path: Path, summary: object, field: str
) -> None:
    path = tmp_path / "dev.json"
    stored = {**entry(10.0), "summary": summary}
    path.write_text(json.dumps({"schema_version": 1, "device": "dev", "cases": {"w/a": stored}}))
    with pytest.raises(baselines.BaselineError, match=re.escape(f"{path}: case 'w/a' needs {field!r}")):
        baselines.load(path)


def test_a_file_given_as_the_baseline_folder_is_an_error_not_no_baselines(tmp_path: Path) -> None:
    folder = tmp_path / "baselines"
    folder.write_text("not a folder")
    with pytest.raises(baselines.BaselineError, match=re.escape(f"{folder}: a file is there, not a folder")):
        baselines.load(baselines.baseline_path(folder, "dev"))


def test_history_keeps_the_last_accepted_runs_of_recorded_cases_only(tmp_path: Path) -> None:
    path = baselines.baseline_path(tmp_path, "dev")
    baselines.update(path, "dev", {"w/a": entry(10.0), "w/b": entry(5.0)})
    assert baselines.add_history(path, "dev", {"w/a": 10.5, "w/gone": 3.0}) == ["w/a"]
    for night in range(baselines.HISTORY_RUNS + 2):
        baselines.add_history(path, "dev", {"w/a": 11.0 + night})
    stored = baselines.load(path)
    kept = baselines.history(stored["w/a"])
    assert len(kept) == baselines.HISTORY_RUNS and kept[-1] == 11.0 + baselines.HISTORY_RUNS + 1
    assert baselines.history(stored["w/b"]) == [] and "w/gone" not in stored
    baselines.update(path, "dev", {"w/a": entry(9.0)})  # a new recording starts the history again
    assert baselines.history(baselines.load(path)["w/a"]) == []


@pytest.mark.parametrize("key", ["history_ms", *baselines.HOST_CALLS_KEYS])
def test_a_history_or_count_that_is_not_positive_numbers_names_the_case(tmp_path: Path, key: str) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": {**entry(10.0), key: ["x"]}}}))
    with pytest.raises(baselines.BaselineError, match=f"case 'w/a' needs '{key}' as a list of positive"):
        baselines.load(path)


@pytest.mark.parametrize("shares", [[1.2], [-0.1], ["busy"], 0.9])
def test_busy_shares_outside_zero_to_one_name_the_case(tmp_path: Path, shares: object) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": {**entry(10.0), "gpu_busy_history": shares}}}))
    with pytest.raises(baselines.BaselineError, match="case 'w/a' needs 'gpu_busy_history' as a list of shares"):
        baselines.load(path)


def test_further_figures_of_accepted_runs_join_their_own_lists_where_a_case_has_them(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": entry(10.0), "w/b": entry(5.0)}}))
    figures = {"host_calls_history": {"w/a": 672.0}, "gpu_busy_history": {"w/a": 0.69, "w/b": 0.98}}
    assert baselines.add_history(path, "dev", {"w/a": 10.1, "w/b": 5.1}, figures) == ["w/a", "w/b"]
    cases = baselines.load(path)
    assert cases["w/a"]["host_calls_history"] == [672.0] and cases["w/a"]["gpu_busy_history"] == [0.69]
    assert "host_calls_history" not in cases["w/b"] and cases["w/b"]["gpu_busy_history"] == [0.98]


def test_boards_stay_beside_their_medians_as_the_history_rolls_over(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    older = {**entry(10.0), "history_ms": [10.1, 10.2]}  # accepted before boards were kept
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": older, "w/b": entry(5.0)}}))
    baselines.add_history(path, "dev", {"w/a": 10.3, "w/b": 5.1})  # a CPU run: no board, no list
    assert "history_boards" not in baselines.load(path)["w/b"]
    baselines.add_history(path, "dev", {"w/a": 10.4}, board="-001")
    assert baselines.history_boards(baselines.load(path)["w/a"]) == [None, None, None, "-001"]
    for night in range(baselines.HISTORY_RUNS):
        baselines.add_history(path, "dev", {"w/a": 11.0 + night}, board=f"-00{night % 2}")
    stored = baselines.load(path)["w/a"]
    assert len(stored["history_boards"]) == len(stored["history_ms"]) == baselines.HISTORY_RUNS
    assert stored["history_boards"][-1] == "-001" and stored["history_ms"][-1] == 11.0 + baselines.HISTORY_RUNS - 1


@pytest.mark.parametrize("boards", ["-001", [3], [{"part": "-001"}]])
def test_boards_that_are_not_part_numbers_or_nulls_name_the_case(tmp_path: Path, boards: object) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": {**entry(10.0), "history_boards": boards}}}))
    with pytest.raises(baselines.BaselineError, match="case 'w/a' needs 'history_boards' as a list of part numbers"):
        baselines.load(path)


def test_host_figures_that_are_not_numbers_name_the_case(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(
        json.dumps({"schema_version": 1, "cases": {"w/a": {**entry(10.0), "host": {"host_dispatch_us": "fast"}}}})
    )
    with pytest.raises(baselines.BaselineError, match="case 'w/a' needs 'host' as an object of figures"):
        baselines.load(path)
    path.write_text(json.dumps({"schema_version": 1, "cases": {"w/a": {**entry(10.0), "host": {"gpu_busy_share": 0}}}}))
    assert baselines.load(path)["w/a"]["host"] == {"gpu_busy_share": 0}


def test_changes_between_two_loads_name_new_changed_and_removed_cases() -> None:
    old = {"w/a": entry(10.0), "w/b": entry(5.0), "w/gone": entry(1.0)}
    new = {"w/a": entry(11.0), "w/b": entry(5.0), "w/new": entry(2.0)}
    changes = baselines.changes_between(old, new)
    assert [(c.case, c.old_median_ms, c.new_median_ms) for c in changes] == [
        ("w/a", 10.0, 11.0),
        ("w/gone", 1.0, None),
        ("w/new", None, 2.0),
    ]
    assert baselines.format_changes(changes) == [
        "w/a: 10.000 ms -> 11.000 ms (+10.0%), threshold 10.0% -> 10.0%",
        "w/gone: 1.000 ms -> removed",
        "w/new: new -> 2.000 ms, threshold 10.0%",
    ]


def test_a_file_of_the_first_schema_loads_and_one_line_names_the_cases_without_work(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    work = [{"ops": 10, "syncs": 0, "copies": 0}]
    cases = {"w/a": entry(10.0), "w/b": entry(5.0), "w/c": {**entry(5.0), "work": work}}
    path.write_text(json.dumps({"schema_version": 1, "device": "dev", "cases": cases}))
    stored = baselines.load(path)
    note = baselines.lacking_work(path, stored)
    assert note is not None and note.startswith(f"{path}: 2 of 3 cases lack the ATen ops, synchronizations")
    assert "(w/a, w/b)" in note and note.endswith("recorded again with --update-baselines")
    assert baselines.lacking_work(path, {"w/c": stored["w/c"]}) is None


def test_a_baseline_file_behind_a_link_is_read_and_written_through_to_its_target(tmp_path: Path) -> None:
    """Recording replaced the link with a regular file and left its target with the old content."""
    shared = tmp_path / "shared" / "dev.json"
    shared.parent.mkdir()
    shared.write_text(json.dumps({"schema_version": 1, "device": "dev", "cases": {"w/a": entry(10.0)}}))
    link = tmp_path / "dev.json"
    link.symlink_to(shared)
    assert set(baselines.load(link)) == {"w/a"}
    baselines.update(link, "dev", {"w/b": entry(5.0)})
    assert link.is_symlink() and set(baselines.load(shared)) == {"w/a", "w/b"}
    baselines.add_history(link, "dev", {"w/b": 5.0})
    assert link.is_symlink() and baselines.load(shared)["w/b"]["history_ms"] == [5.0]


def test_a_link_that_loops_is_a_file_that_cannot_be_used_and_stays_as_it_is(tmp_path: Path) -> None:
    """It was taken as no stored baseline (exit 0), and recording replaced it with a regular file."""
    link = tmp_path / "dev.json"
    link.symlink_to(tmp_path / "other.json")
    (tmp_path / "other.json").symlink_to(link)
    with pytest.raises(baselines.BaselineError, match=r"dev\.json: a symbolic link that loops"):
        baselines.load(link)
    with pytest.raises(baselines.BaselineError, match="a symbolic link that loops"):
        baselines.update(link, "dev", {"w/b": entry(5.0)})
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "other.json")


def test_the_published_schema_is_valid_and_every_committed_baseline_file_meets_it() -> None:
    """docs/schema/baseline-file.schema.json is what the plugin validates with, for users' tools too."""
    import jsonschema

    root = Path(__file__).resolve().parents[1]
    schema = json.loads((root / "docs" / "schema" / "baseline-file.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in (root / "baselines").glob("*.json"):
        jsonschema.validate(json.loads(path.read_text()), schema, cls=jsonschema.Draft202012Validator)
    assert schema == json.loads(baselines.SCHEMA_FILE.read_text())


def test_infinity_in_a_stored_figure_names_the_case_and_field(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"schema_version": 2, "cases": {"w/a": {**entry(10.0), "history_ms": [float("inf")]}}}))
    with pytest.raises(baselines.BaselineError, match="case 'w/a' needs 'history_ms' as a list of positive numbers"):
        baselines.load(path)


def test_a_recorded_case_whose_time_awaits_calibration_says_so_beside_its_threshold() -> None:
    """Two H200 entries of the committed file as a recording writes them: a launch-bound example whose GPU
    waited for the host (busy 11%) and a GPU-bound case (busy 99%)."""
    committed = json.loads((Path(__file__).parents[1] / "baselines" / "nvidia-h200.json").read_text())["cases"]
    names = ("text_classifier/amp_bf16", "gpt2/reference")  # as recorded: no runs of later sessions yet
    new = {name: {key: value for key, value in committed[name].items() if "history" not in key} for name in names}
    paced, busy = sorted(
        baselines.changes_between({}, new), key=lambda change: change.case != "text_classifier/amp_bf16"
    )
    assert paced.awaits_calibration and not busy.awaits_calibration
    assert baselines.detects_listed(paced).endswith("% (its time awaits calibration: its GPU waited for the host)")
    assert "awaits" not in baselines.detects_listed(busy)
    calibrated = {**new["text_classifier/amp_bf16"], "history_ms": [16.0, 16.5, 15.8]}
    assert not baselines.changes_between({}, {"t/a": calibrated})[0].awaits_calibration
