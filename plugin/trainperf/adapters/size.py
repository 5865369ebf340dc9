"""How an adapted workload trains at one size (TINY on the CPU, FULL on the GPU)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Size:
    """Batch size, input length (an image's side in pixels or a sequence's tokens; None: the model's own),
    warm-up and timed iterations, and AdamW's learning rate."""

    batch: int
    length: int | None = None
    warmup: int = 10
    iters: int = 50
    lr: float = 1e-3

    def __post_init__(self) -> None:
        if self.batch < 1 or (self.length is not None and self.length < 1) or self.warmup < 0 or self.iters < 1:
            raise ValueError(f"a Size needs batch >= 1, length >= 1, warmup >= 0 and iters >= 1, got {self}")
        if not self.lr > 0:
            raise ValueError(f"a Size needs a learning rate above 0, got {self.lr!r}")


def workload_name(prefix: str, model: str) -> str:
    """A workload name from a model's name: letters, digits and '_' only (it keys baselines and test ids)."""
    return f"{prefix}_{re.sub(r'[^0-9A-Za-z]+', '_', model).strip('_').lower()}"


def missing_package(package: str, adapter: str, error: Exception) -> ImportError:
    """Why ``adapter`` cannot run: ``package`` is not installed, or is installed and failed to import (a
    dependency missing or built against another torch), with that error's first line."""
    if isinstance(error, ModuleNotFoundError) and error.name == package:
        return ModuleNotFoundError(
            f"{adapter} needs the {package} package, which is not installed: pip install {package}"
        )
    reason = (str(error).strip().splitlines() or ["(no message)"])[0][:200]
    return ImportError(
        f"{adapter} needs the {package} package, which failed to import: {type(error).__name__}: {reason}"
    )
