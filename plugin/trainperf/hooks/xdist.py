"""pytest-xdist with ``--perf-gpu-per-worker``: the controller hands each worker the folder where GPUs are
claimed; a worker claims one (``workers.claim_gpu``) and runs on that GPU's share of the cores."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any

import pytest

from trainperf.config.settings import Settings
from trainperf.measure import workers

CLAIMS_KEY = pytest.StashKey[str]()  # the controller's folder of GPU claims
CLAIM_KEY = pytest.StashKey[IO[str]]()  # a worker's held GPU claim
CLAIMS_INPUT = "trainperf_gpu_claims"


def is_controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


def set_up(settings: Settings, config: pytest.Config) -> None:
    """A worker claims its GPU before CUDA starts; the controller clears earlier runs' worker files."""
    claims = getattr(config, "workerinput", {}).get(CLAIMS_INPUT)
    if settings.gpu_per_worker and claims is not None:
        visible = workers.visible_gpus(os.environ, workers.nvml_gpu_count())
        try:
            index, gpu, held = workers.claim_gpu(visible, Path(claims))
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[CLAIM_KEY] = held  # open for the worker's lifetime
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # before CUDA starts: torch reads it then
        workers.pin_to_share(index, min(len(visible), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    if is_controller(config) and settings.report is not None:
        for stale in workers.worker_files(Path(settings.report)):
            stale.unlink()


def hand_out_claims(config: pytest.Config, workerinput: dict[str, Any]) -> None:
    """The controller, for each worker it starts (a crashed one's replacement too)."""
    if CLAIMS_KEY not in config.stash:
        config.stash[CLAIMS_KEY] = tempfile.mkdtemp(prefix="trainperf-gpu-claims-")
    workerinput[CLAIMS_INPUT] = config.stash[CLAIMS_KEY]


def clean_up(config: pytest.Config) -> None:
    claims = config.stash.get(CLAIMS_KEY, None)
    if claims is not None:
        shutil.rmtree(claims, ignore_errors=True)
