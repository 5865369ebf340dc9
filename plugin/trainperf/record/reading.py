"""What a script or a notebook reads of trainperf's files: a run's cases as a table, and the baseline
file a device is judged against with its stored cases, each checked against its published schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainperf.measure import device as devices
from trainperf.record import document
from trainperf.store import baselines

if TYPE_CHECKING:
    import pandas as pd


def read_run(path: str | Path) -> pd.DataFrame:
    """One row of figures per case of a run document (``run.json``): median, speedup, work counts,
    verdict... Raises ``ValueError`` naming the field where the file is not a run document."""
    return document.cases_frame(document.load(Path(path)).cases)


def baseline_file(directory: str | Path, device: str = "auto") -> Path:
    """The file in ``directory`` whose baselines this machine's ``device`` (auto, cuda or cpu) is
    judged against: one file per GPU model (or CPU model and core count)."""
    chosen = devices.choose_device(device)
    return baselines.baseline_path(directory, devices.fingerprint(chosen).slug)


def read_baselines(path: str | Path) -> dict[str, dict[str, Any]]:
    """The cases stored in a baseline file, by case name (``{}`` where there is no file yet); raises
    ``ValueError`` naming the case and the field where the file cannot be used."""
    try:
        return baselines.load(Path(path))
    except baselines.BaselineError as error:
        raise ValueError(str(error)) from None
