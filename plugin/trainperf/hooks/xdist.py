"""pytest-xdist: with ``--perf-gpu-per-worker`` the controller hands each worker the folder where GPUs are
claimed, and a worker claims one (``workers.claim_gpu``) and runs on that GPU's share of the cores.
Without --perf-report a worker sends its run document to the controller with its results (xdist's
``workeroutput``), so the controller's summary shows every worker's cases."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import filelock
import pytest

from trainperf.config.settings import Settings
from trainperf.measure import workers

if TYPE_CHECKING:
    from trainperf.record.document import RunDocument
    from trainperf.record.session import PerfSession

CLAIMS_KEY = pytest.StashKey[str]()  # the controller's folder of GPU claims
CLAIM_KEY = pytest.StashKey[filelock.BaseFileLock]()  # a worker's held GPU claim
CLAIMS_INPUT = "trainperf_gpu_claims"
RUN_OUTPUT = "trainperf_run"  # a worker's run document, as JSON text, in its workeroutput


def is_controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


def planned_workers(config: pytest.Config) -> int:
    """The workers pytest-xdist starts for this run (its -n or --tx), 0 where it distributes nothing."""
    if getattr(config.option, "dist", "no") == "no":
        return 0
    specs = getattr(config.option, "tx", None) or []
    return sum(int(spec.split("*", 1)[0]) if "*" in spec else 1 for spec in specs)


def refuse_shared_recording(settings: Settings, config: pytest.Config) -> None:
    """A recording under -n N without a GPU a worker would store times measured beside the other workers'
    cases, which later runs alone would judge against: a usage error, before any worker starts."""
    count = planned_workers(config)
    if settings.update_baselines and not settings.gpu_per_worker and count > 1:
        raise pytest.UsageError(
            f"--update-baselines under pytest-xdist: {count} workers would record times measured at once on "
            "this host's cores and GPU; record without -n, or give each worker a GPU of its own "
            "(--perf-gpu-per-worker)"
        )


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


def send_run(config: pytest.Config, perf: PerfSession) -> None:
    """A worker's run document for the controller, where no --perf-report folder holds the workers' files."""
    from trainperf.record.document import run_document

    output = getattr(config, "workeroutput", None)
    if output is not None and perf.settings.report is None:
        output[RUN_OUTPUT] = json.dumps(run_document(perf))


def received_run(node: Any) -> RunDocument | None:
    """The run document a finished worker sent (``send_run``), named as its file would be; None if it sent
    none (it crashed, ran no case, or wrote its file under --perf-report)."""
    from trainperf.record.document import RunDocument

    text = getattr(node, "workeroutput", {}).get(RUN_OUTPUT)
    if text is None:
        return None
    name = workers.run_file({"PYTEST_XDIST_WORKER": node.workerinput["workerid"]})
    return RunDocument(Path(name), json.loads(text))
