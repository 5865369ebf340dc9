"""An optimization: the knobs a case turns and the targets it declares; the metric a workload reports."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REFERENCE = "reference"
MAX_SLOWDOWN_FLOOR = 0.10  # the largest floor a case may declare (gate.MAX_FLOOR)
AMP_DTYPES = (None, "bfloat16", "float16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the settings a data-parallel case may turn (``ddp={...}``; trainperf.measure.data_parallel says what each does):
# DistributedDataParallel's, ZeRO-1's, and FSDP2's, which replaces DistributedDataParallel
DDP_SETTINGS = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "comm_hook", "no_sync", "zero")
FSDP_SETTINGS = ("fsdp", "param_dtype", "cpu_offload")
COMM_HOOKS = (None, "bf16_compress", "fp16_compress")
FSDP_MODES = ("full_shard", "shard_grad_op")


@dataclass(frozen=True)
class Optimization:
    """One optimization case: the knobs it turns and what it must prove.

    Knobs the runner applies to every workload are fields; knobs only one workload understands go
    in ``options``. Targets are keyed by device type ("cuda", "cpu"): a speedup declared for "cuda"
    is not asked of the tiny CPU configuration.
    """

    name: str
    # data path
    num_workers: int = 0  # DataLoader worker processes
    pin_memory: bool = False  # page-locked host batches (CUDA only)
    non_blocking: bool = False  # asynchronous host-to-device copies
    prefetch: bool = False  # copy the next batch to the GPU on a side stream while this one computes
    # compute
    amp_dtype: str | None = None  # autocast dtype: None, "bfloat16" or "float16"
    grad_scaler: bool = False  # torch.amp.GradScaler (for float16)
    tf32: bool = False  # TF32 tensor cores for float32 matmuls and convolutions
    channels_last: bool = False  # NHWC model and 4-D inputs
    cudnn_benchmark: bool = False  # cuDNN times its convolution algorithms and keeps the fastest
    compile: bool = False  # torch.compile the model and its loss
    compile_mode: str = "default"  # torch.compile mode; "reduce-overhead" records CUDA graphs
    # step
    sync_every_step: bool = False  # read the loss on the host after every step (a logging loop's sync)
    accumulation_steps: int = 1  # split each batch into this many micro-batches, one optimizer step
    needs_cuda: str | None = None  # why the case runs on CUDA only (skipped elsewhere with this reason)
    needs_package: str | None = None  # a pip requirement it imports ("torchao==0.18.0"), skipped where absent
    # data parallel: one process per GPU (two gloo processes on the CPU) with DistributedDataParallel and
    # these settings; {} for its defaults, None for a single-process case
    ddp: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # workload-specific knobs
    # what it must prove
    min_speedup: Mapping[str, float] = field(default_factory=dict)  # over the reference, same run
    max_memory_ratio: Mapping[str, float] = field(default_factory=dict)  # peak memory vs reference
    accuracy_tolerance: float | None = None  # absolute; None: the workload's default
    # the smallest slowdown against the stored baseline that the gate judges for this case, whatever its
    # measured noise; None: the gate's default (3%); a case that sets one says why, at most 10%
    slowdown_floor: float | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"optimization name {self.name!r} must be letters, digits, '_' or '-'")
        if self.amp_dtype not in AMP_DTYPES:
            raise ValueError(f"{self.name}: amp_dtype must be one of {AMP_DTYPES}, got {self.amp_dtype!r}")
        if self.num_workers < 0:
            raise ValueError(f"{self.name}: num_workers must be >= 0")
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"{self.name}: compile_mode must be one of {COMPILE_MODES}, got {self.compile_mode!r}")
        if self.compile_mode != "default" and not self.compile:
            raise ValueError(f"{self.name}: compile_mode={self.compile_mode!r} is torch.compile's: set compile=True")
        if self.grad_scaler and self.amp_dtype is None:
            raise ValueError(f"{self.name}: grad_scaler scales the loss of a reduced-precision autocast: set amp_dtype")
        if self.slowdown_floor is not None and not 0 < self.slowdown_floor <= MAX_SLOWDOWN_FLOOR:
            raise ValueError(
                f"{self.name}: slowdown_floor must be above 0 and at most {MAX_SLOWDOWN_FLOOR:.0%} (the gate measures "
                f"each case's noise itself), got {self.slowdown_floor!r}"
            )
        if self.accumulation_steps < 1:
            raise ValueError(f"{self.name}: accumulation_steps must be >= 1")
        if self.ddp is not None:
            self._check_data_parallel(self.ddp)

    def _check_data_parallel(self, settings: Mapping[str, Any]) -> None:
        known = FSDP_SETTINGS if "fsdp" in settings else DDP_SETTINGS
        unknown = sorted(set(settings) - set(known))
        if unknown:
            kind = "FSDP" if "fsdp" in settings else "ddp"
            raise ValueError(f"{self.name}: unknown {kind} settings {unknown}; known: {', '.join(known)}")
        if settings.get("comm_hook") not in COMM_HOOKS:
            raise ValueError(f"{self.name}: ddp comm_hook must be one of {COMM_HOOKS}")
        if "fsdp" in settings and settings["fsdp"] not in FSDP_MODES:
            raise ValueError(f"{self.name}: fsdp must be one of {FSDP_MODES}, got {settings['fsdp']!r}")
        if settings.get("param_dtype") not in AMP_DTYPES:
            raise ValueError(f"{self.name}: FSDP param_dtype must be one of {AMP_DTYPES}")

    def missing_package(self) -> str | None:
        """Why the case cannot run here for want of its package (with the line that installs it), or None."""
        if self.needs_package is None:
            return None
        module = re.split(r"[<>=!~\[ ]", self.needs_package, maxsplit=1)[0]
        if importlib.util.find_spec(module) is not None:
            return None
        return f"needs {module}, not installed here: pip install '{self.needs_package}'"

    def but(self, name: str, **changes: Any) -> Optimization:
        """A copy under a new name with some knobs changed (targets are not inherited)."""
        inherited: dict[str, Any] = {
            "min_speedup": {},
            "max_memory_ratio": {},
            "accuracy_tolerance": None,
            "slowdown_floor": None,
        }
        return dataclasses.replace(self, name=name, **{**inherited, **changes})

    def knobs(self) -> dict[str, Any]:
        """The knobs that differ from the reference, for reports."""
        base = Optimization(REFERENCE)
        skip = {
            "name",
            "min_speedup",
            "max_memory_ratio",
            "accuracy_tolerance",
            "slowdown_floor",
            "needs_cuda",
            "needs_package",
        }
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in skip and getattr(self, f.name) != getattr(base, f.name)
        }


def _knob_names_checked(init: Any) -> Any:
    """The dataclass's ``__init__``, with a misspelled knob named and the nearest knob suggested, as
    Python's own TypeError does not: ``Optimization("amp", amp_dtyp="bfloat16")``."""
    names = {f.name for f in dataclasses.fields(Optimization)}

    @functools.wraps(init)
    def checked(self: Optimization, *args: Any, **knobs: Any) -> None:
        for knob in knobs:
            if knob not in names:
                close = difflib.get_close_matches(knob, names, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise TypeError(
                    f"Optimization has no knob {knob!r}: {hint}(a knob only your workload reads goes in "
                    f"options={{{knob!r}: ...}})"
                )
        init(self, *args, **knobs)

    return checked


Optimization.__init__ = _knob_names_checked(Optimization.__init__)  # type: ignore[method-assign]


@dataclass(frozen=True)
class Metric:
    """The held-out metric a workload reports."""

    name: str  # "accuracy", "val_loss", ...
    higher_is_better: bool
    default_tolerance: float  # absolute, against the reference case of the same run
    floor: float | None = None  # any case must reach this (learned something)
    min_gain: float | None = None  # any case must improve on the untrained model by this fraction
