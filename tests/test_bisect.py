"""``trainperf bisect`` on a throw-away git repository of a toy workload: it names the commit that added
ops and the one that added a host read, skips a commit whose case errors with its reason, and leaves
the checkout, its branch and its index as they were, also when interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TOY_SOURCE, toy_test

NODE = "perf_tests/test_toy.py::test_toy[reference]"
ROOT = Path(__file__).resolve().parent.parent


def git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"]
    return subprocess.run([*command, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, subject: str, options: str) -> str:
    (repo / "perf_tests").mkdir(exist_ok=True)
    (repo / "perf_tests" / "test_toy.py").write_text(toy_test(f'[Optimization("reference", options={options})]'))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def trainperf(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "trainperf.cli.main", *args]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=quiet())


def quiet() -> dict[str, str]:
    return {**os.environ, "TRAINPERF_DEVICE": "cpu", "TRAINPERF_BASELINE_DIR": "bl", "PYTEST_ADDOPTS": ""}


def record(repo: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pytest",
        NODE,
        "-q",
        "-p",
        "no:cacheprovider",
        "--update-baselines",
        "--perf-runs=1",
    ]
    subprocess.run(command, cwd=repo, check=True, capture_output=True, env=quiet())


def state(repo: Path) -> tuple[str, str, str, str]:
    """The checkout as a user sees it: branch, HEAD, status, worktrees."""
    return (
        git(repo, "branch", "--show-current"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "status", "--porcelain"),
        git(repo, "worktree", "list", "--porcelain").count("worktree "),
    )


@pytest.fixture
def history(tmp_path: Path) -> dict[str, str]:
    """Seven commits: the first recorded, one adding ops, one whose case errors, one adding a host read."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "toy_workload.py").write_text(TOY_SOURCE)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (repo / ".gitignore").write_text("bl/\n.trainperf/\n")
    (repo / "ci").mkdir()
    for script in ("nightly.sh", "gpu_check.py"):  # the nightly as a user's repository carries it
        (repo / "ci" / script).write_text((ROOT / "ci" / script).read_text())
    commits = {"first": commit(repo, "Train the toy", "{}")}
    record(repo)
    commits["tidy"] = commit(repo, "Tidy the test", "{'sleep_ms': 0.0}")
    commits["ops"] = commit(repo, "Add three ops to the step", "{'extra_ops': 3}")
    commits["broken"] = commit(repo, "Break the build", "{'extra_ops': 3, 'raise_in': 'build'}")
    commits["fixed"] = commit(repo, "Fix the build", "{'extra_ops': 3, 'sleep_ms': 0.0}")
    commits["read"] = commit(repo, "Log the loss every step", "{'extra_ops': 3, 'host_reads': 1}")
    commits["last"] = commit(repo, "Rename a variable", "{'extra_ops': 3, 'host_reads': 1, 'sleep_ms': 0.0}")
    commits["repo"] = str(repo)
    return commits


@pytest.mark.slow
def test_bisect_names_the_commit_that_added_ops_then_the_one_that_added_a_host_read(history: dict[str, str]) -> None:
    repo = Path(history["repo"])
    before = state(repo)
    found = trainperf(repo, "bisect", NODE, "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    outcome = json.loads(found.stdout)
    assert outcome["good"] == history["first"]  # the baseline entry's commit
    assert outcome["first_bad"]["commit"] == history["ops"]
    assert outcome["first_bad"]["subject"] == "Add three ops to the step" and outcome["first_bad"]["author"] == "Ada"
    assert outcome["moved"].startswith("toy/reference: more work per iteration than recorded: ATen ops ")
    assert outcome["step_count"] == len(outcome["steps"]) and outcome["seconds"] > 0
    skipped = [step for step in outcome["steps"] if step["outcome"] == "skip"]
    assert all(step["commit"] == history["broken"] for step in skipped)
    assert all("error" in step["detail"] and "toy build failed" in step["detail"] for step in skipped)
    assert state(repo) == before

    git(repo, "checkout", "-q", history["fixed"])
    record(repo)  # re-recorded with the ops: the host read is what moves now
    git(repo, "checkout", "-q", "main")
    again = trainperf(repo, "bisect", NODE)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"first bad commit: {history['read'][:9]} 'Log the loss every step' (Ada, " in again.stdout
    assert "synchronizations" in again.stdout and "+1 aten::item" in again.stdout
    assert state(repo) == before

    not_good = trainperf(repo, "bisect", NODE, history["read"])  # a GOOD whose work is already more
    assert not_good.returncode == 2 and f"GOOD {history['read'][:9]} is not good: " in not_good.stderr
    missing = trainperf(repo, "bisect", NODE.replace("reference", "no_such_case"))
    assert missing.returncode == 2 and "pytest ran no such case at " in missing.stderr
    assert state(repo) == before


@pytest.mark.slow
def test_an_interrupted_bisect_leaves_the_checkout_as_it_was(history: dict[str, str]) -> None:
    repo = Path(history["repo"])
    before = state(repo)
    command = [sys.executable, "-m", "trainperf.cli.main", "bisect", NODE]
    running = subprocess.Popen(
        command, cwd=repo, env=quiet(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # an xdist worker ignores SIGINT
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while state(repo)[3] < 2 and time.monotonic() < deadline:  # the scratch worktree is there: it runs
        time.sleep(0.2)
    running.send_signal(signal.SIGINT)
    _, error = running.communicate(timeout=120)
    assert running.returncode == 130, error
    assert "the checkout, its branch and its index are as they were" in error
    assert state(repo) == before
    assert not git(repo, "for-each-ref", "refs/bisect")


@pytest.mark.slow
def test_a_failed_night_bisects_its_case_from_the_last_green_one_into_run_json_and_the_summary(
    history: dict[str, str], tmp_path: Path
) -> None:
    repo, out, summary = Path(history["repo"]), tmp_path / "night", tmp_path / "summary.md"
    (repo / ".trainperf").mkdir()
    (repo / ".trainperf" / "last-green-commit").write_text(history["first"] + "\n")
    environment = {**quiet(), "GITHUB_STEP_SUMMARY": str(summary), "TRAINPERF_DEVICE": "auto"}
    night = subprocess.run(["bash", "ci/nightly.sh", "--dry-run", str(out), "-p", "no:cacheprovider"],
                           cwd=repo, capture_output=True, text=True, env=environment)  # fmt: skip
    assert night.returncode == 1, night.stdout[-3000:] + night.stderr[-3000:]  # the night's own status
    (found,) = json.loads((out / "report" / "run.json").read_text())["culprits"]
    assert found["found"] and found["commit"] == history["ops"] and found["case"] == "toy/reference"
    assert found["moved"].startswith("more work per iteration than recorded: ATen ops ")
    line = "`toy/reference`: more work per iteration than recorded: ATen ops "
    assert (
        line in summary.read_text()
        and f"first at `{history['ops'][:9]}` 'Add three ops to the step'" in summary.read_text()
    )
    assert "Add three ops to the step" in (out / "report" / "report.md").read_text()
    assert (repo / ".trainperf" / "last-green-commit").read_text().strip() == history["first"]  # still red
