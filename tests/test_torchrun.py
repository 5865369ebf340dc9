"""Data-parallel cases under a launcher: torchrun's variables read, two torchrun "nodes" (gloo, tiny
sizes) giving the same cases, metrics and verdicts as the run that spawns its own processes, and a node
killed mid-run ending the other with its run document written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from trainperf.measure.launcher import Launch, LaunchError, from_environment

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
CASES = ("-k", "ddp_reference or no_sync_accumulation")


def test_no_launcher_variables_means_the_cases_spawn_their_own_processes() -> None:
    assert from_environment({"PATH": "/usr/bin"}) is None


def test_torchruns_variables_make_this_process_one_rank_that_reports_only_as_rank_0() -> None:
    launch = from_environment(TORCHRUN)
    assert launch == Launch(rank=1, world=2, local_rank=0) and not launch.reports
    assert from_environment({**TORCHRUN, "RANK": "0"}).reports  # type: ignore[union-attr]


def test_incomplete_or_wrong_variables_are_named() -> None:
    with pytest.raises(LaunchError, match="set RANK, WORLD_SIZE but not LOCAL_RANK, MASTER_ADDR, MASTER_PORT"):
        from_environment({"RANK": "0", "WORLD_SIZE": "2"})
    with pytest.raises(LaunchError, match="whole numbers"):
        from_environment({**TORCHRUN, "WORLD_SIZE": "two"})
    with pytest.raises(LaunchError, match=r"RANK=2 must lie in 0..WORLD_SIZE-1"):
        from_environment({**TORCHRUN, "RANK": "2"})


def _pytest(report: Path, baselines: Path, cases: tuple[str, ...] = CASES) -> list[str]:
    return ["-m", "pytest", "perf_tests/test_ddp.py", *cases, "-p", "no:cacheprovider", "-q", "--perf-device=cpu",
            f"--baseline-dir={baselines}", f"--perf-report={report}", "-W", "ignore::DeprecationWarning"]  # fmt: skip


def _cases(report: Path) -> dict[str, tuple[str, float]]:
    run = json.loads((report / "run.json").read_text())
    return {case["name"]: (case["extra_info"]["verdict"], case["extra_info"]["metric"]) for case in run["benchmarks"]}


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in TORCHRUN} | {"OMP_NUM_THREADS": "1"}


def _two_nodes(command: list[str], env: dict[str, str]) -> tuple[list[subprocess.Popen[str]], list[str]]:
    """``torchrun --nnodes=2 ... command`` started twice, as node 0 and node 1 of one host; their logs."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
              f"--rdzv-endpoint=127.0.0.1:{port}"]  # fmt: skip
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    nodes = [subprocess.Popen([*launch, f"--node-rank={rank}", *command], cwd=ROOT, env=env, **out) for rank in (0, 1)]
    return nodes, [node.communicate(timeout=600)[0] for node in nodes]


@pytest.mark.slow
def test_two_torchrun_nodes_train_the_cases_as_the_spawned_run_does(tmp_path: Path) -> None:
    env = _environment()
    spawned = subprocess.run([sys.executable, *_pytest(tmp_path / "spawned", tmp_path / "bl")], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert spawned.returncode == 0, spawned.stdout[-3000:]
    # torchrun -m pytest ...: pytest as a module
    nodes, logs = _two_nodes(_pytest(tmp_path / "launched", tmp_path / "bl"), env)
    assert [node.returncode for node in nodes] == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    assert "2 gloo processes" in logs[0] and "rank 1 of 2: rank 0 writes the run document" in logs[1]
    launched, alone = _cases(tmp_path / "launched"), _cases(tmp_path / "spawned")
    assert launched == alone  # the same cases, verdicts and held-out metric to the last digit
    assert set(alone) == {"gpt2_ddp/ddp_reference", "gpt2_ddp/no_sync_accumulation"}


@pytest.mark.slow
def test_a_node_killed_mid_run_ends_the_other_with_one_line_and_its_finished_cases_written(tmp_path: Path) -> None:
    """Rank 1 is killed in its second case: rank 0 fails that case with one line, runs no other, and its
    run document keeps the first case and names the one that did not finish."""
    env = _environment() | {"PYTHONPATH": str(ROOT / "tests")}
    three = ("-k", "ddp_reference or bucket_cap or static_graph")
    command = [*_pytest(tmp_path / "launched", tmp_path / "bl", three), "-p", "kill_rank"]
    nodes, logs = _two_nodes(command, env)
    assert nodes[0].returncode != 0 and nodes[1].returncode != 0
    stop = "Interrupted: trainperf: gpt2_ddp/bucket_cap failed in the launcher's group; its other cases cannot run"
    assert stop in logs[0], logs[0][-3000:]
    # pytest's short summary repeats the reason too where the terminal is wide enough to show it
    failures = [line for line in logs[0].splitlines() if "data-parallel run failed" in line]
    assert failures and all("gpt2_ddp/bucket_cap: data-parallel run failed: rank 0:" in line for line in failures)
    run = json.loads((tmp_path / "launched" / "run.json").read_text())
    assert [case["name"] for case in run["benchmarks"]] == ["gpt2_ddp/ddp_reference"]
    assert [case["name"] for case in run["unfinished"]] == ["gpt2_ddp/bucket_cap"]
