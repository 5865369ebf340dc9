"""One GPU per xdist worker: which GPU each worker gets."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from trainperf.measure import workers


def test_the_visible_gpus_are_those_cuda_visible_devices_names_else_all() -> None:
    assert workers.visible_gpus({}, 2) == ["0", "1"]
    assert workers.visible_gpus({"CUDA_VISIBLE_DEVICES": "3, 5"}, 8) == ["3", "5"]
    assert workers.visible_gpus({}, 0) == []


def test_each_worker_claims_a_gpu_no_other_holds_and_a_crashed_workers_gpu_is_free_again(tmp_path) -> None:
    first = workers.claim_gpu(["3", "5"], tmp_path)
    second = workers.claim_gpu(["3", "5"], tmp_path)
    assert first[:2] == (0, "3")
    assert second[:2] == (1, "5")
    held = "each of the 2 visible GPUs is held by another worker of this run: run at most -n 2"
    with pytest.raises(ValueError, match=held):
        workers.claim_gpu(["3", "5"], tmp_path)
    first[2].release()  # the worker on GPU 3 ended; the one started in its place gets GPU 3
    assert workers.claim_gpu(["3", "5"], tmp_path)[:2] == (0, "3")
    with pytest.raises(ValueError, match="no GPU is visible"):
        workers.claim_gpu([], tmp_path)


def test_workers_write_their_own_run_file() -> None:
    assert workers.run_file({}) == "run.json"
    assert workers.run_file({"PYTEST_XDIST_WORKER": "gw1"}) == "run-gw1.json"


def test_each_worker_gets_its_own_equal_share_of_the_physical_cores() -> None:
    cores = [[7], [0], [1], [2], [3], [4], [5], [6], [8]]  # any order; the ninth core is left over
    assert workers.cores_of_worker(0, 2, cores) == [0, 1, 2, 3]
    assert workers.cores_of_worker(1, 2, cores) == [4, 5, 6, 7]
    siblings = [[0, 4], [1, 5], [2, 6], [3, 7]]  # hardware threads numbered across the cores
    assert workers.cores_of_worker(1, 2, siblings) == [2, 3, 6, 7]
    assert workers.cores_of_worker(1, 4, [[0], [1], [2], [3]]) == [1]
    assert workers.cores_of_worker(2, 4, [[0, 1]]) == [0, 1]  # fewer cores than workers: all of them


def test_threads_are_grouped_by_the_physical_core_the_kernel_reports(tmp_path) -> None:
    for thread, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3", 4: "4-5", 5: "4-5"}.items():
        topology = tmp_path / f"cpu{thread}" / "topology"
        topology.mkdir(parents=True)
        (topology / "thread_siblings_list").write_text(siblings + "\n")
    assert workers.physical_cores([0, 1, 2, 3, 4, 5], tmp_path) == [[0, 2], [1, 3], [4, 5]]
    assert workers.physical_cores([0, 1, 4, 9], tmp_path) == [[0], [1], [4], [9]]  # 9: no topology


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="this OS sets no CPU affinity")
def test_a_pinned_worker_and_its_torch_threads_run_on_its_share_alone() -> None:
    script = (
        "import os, torch; from trainperf.measure import workers; "
        "share = workers.pin_to_share(1, 2); "
        "print(share, sorted(os.sched_getaffinity(0)), torch.get_num_threads())"
    )
    share = workers.cores_of_worker(1, 2, workers.physical_cores(os.sched_getaffinity(0)))
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == f"{share} {share} {len(share)}"
