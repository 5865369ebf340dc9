"""One GPU per xdist worker: which GPU each worker gets."""

from __future__ import annotations

import pytest
from trainperf import workers


def test_each_worker_gets_the_kth_visible_gpu() -> None:
    assert workers.gpu_of_worker("gw0", {}, 2) == "0"
    assert workers.gpu_of_worker("gw1", {}, 2) == "1"
    assert workers.gpu_of_worker("gw1", {"CUDA_VISIBLE_DEVICES": "3, 5"}, 8) == "5"
    with pytest.raises(ValueError, match="worker gw2 has no GPU of its own \\(2 visible\\): run at most -n 2"):
        workers.gpu_of_worker("gw2", {"CUDA_VISIBLE_DEVICES": "3,5"}, 8)


def test_workers_write_their_own_run_file() -> None:
    assert workers.run_file({}) == "run.json"
    assert workers.run_file({"PYTEST_XDIST_WORKER": "gw1"}) == "run-gw1.json"
