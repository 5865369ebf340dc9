"""How a case's optimization reaches the training step: the model's device, layout and data-parallel
wrapper; the batch's copy to the device; forward, backward and optimizer with autocast, compile,
accumulation and loss scaling, each an NVTX phase; and the knobs that change nothing in a training."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from trainperf.measure.phases import PhaseMarker
from trainperf.spec.optimization import Optimization
from trainperf.spec.workload import Batch, Training


@contextlib.contextmanager
def backend_settings(optimization: Optimization) -> Iterator[None]:
    """While a case runs: TF32 tensor cores for float32 matmuls and convolutions, or strict float32;
    cuDNN's convolution autotuner on or off."""
    matmul, cudnn_tf32 = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    benchmark = torch.backends.cudnn.benchmark
    torch.set_float32_matmul_precision("high" if optimization.tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = optimization.tf32
    torch.backends.cudnn.benchmark = optimization.cudnn_benchmark
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(matmul)
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
        torch.backends.cudnn.benchmark = benchmark


def prepare_model(training: Training, device: torch.device, optimization: Optimization) -> torch.nn.Module:
    """The training's model on the device, in the case's layout, wrapped or sharded for data parallelism
    (which may give ``training`` a new optimizer over the sharded parameters)."""
    model = training.model.to(device)
    if optimization.channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if optimization.ddp is not None:
        from trainperf.measure.data_parallel import data_parallel

        model = data_parallel(model, device, optimization.ddp, training)
    return model.train()


def unapplied_knobs(training: Training, device: torch.device, optimization: Optimization) -> list[str]:
    """The case's knobs that change nothing in this training, each with why. The data-path knobs reach
    the batches only through a DataLoader the workload builds with ``loader_settings`` (the runner
    cannot apply them to batches it is handed), and channels_last lays out 4-D weights and inputs only.
    A case whose knob did nothing would be timed, judged and recorded as what it is not."""
    found = []
    asked: dict[str, object] = {"num_workers": optimization.num_workers}
    if device.type == "cuda":  # pinned memory is for copies to a GPU: loader_settings drops it elsewhere
        asked["pin_memory"] = optimization.pin_memory
    asked = {knob: value for knob, value in asked.items() if value}
    batches = training.batches
    if asked and not isinstance(batches, torch.utils.data.DataLoader):
        found.append(
            f"{_knobs_text(asked)} not applied: the batches are a {type(batches).__name__}, not a DataLoader "
            "built with loader_settings(optimization, device)"
        )
    elif asked:
        missed = {knob: value for knob, value in asked.items() if getattr(batches, knob) != value}
        if missed:
            built = {knob: getattr(batches, knob) for knob in missed}
            found.append(
                f"{_knobs_text(missed)} not applied: the DataLoader was built with {_knobs_text(built)}; "
                "build it with loader_settings(optimization, device)"
            )
    if optimization.channels_last and not any(p.dim() == 4 for p in training.model.parameters()):
        found.append("channels_last changes nothing: the model has no 4-D weight to lay out")
    return found


def _knobs_text(knobs: dict[str, object]) -> str:
    return ", ".join(f"{knob}={value}" for knob, value in knobs.items())


def autocast(device: torch.device, optimization: Optimization) -> contextlib.AbstractContextManager[Any]:
    if optimization.amp_dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=getattr(torch, optimization.amp_dtype))


def fetcher(
    batches: Iterator[Batch], device: torch.device, optimization: Optimization, mark: PhaseMarker
) -> Callable[[], tuple[Batch, float]]:
    """Returns fetch() -> (batch on the device, seconds the host waited for it)."""

    def move(tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.to(device, non_blocking=optimization.non_blocking)
        if optimization.channels_last and tensor.dim() == 4 and tensor.is_floating_point():
            tensor = tensor.contiguous(memory_format=torch.channels_last)
        return tensor

    slice_for_rank: Callable[[Batch], Batch] | None = None  # a data-parallel rank trains its own slice
    if optimization.ddp is not None:
        from trainperf.measure.data_parallel import own_slice

        slice_for_rank = own_slice

    if optimization.prefetch and device.type == "cuda":
        from trainperf.measure.prefetch import SideStreamCopies

        batches = SideStreamCopies(batches, device, move)  # already on the device: move() leaves them be

    fetched = 0

    def fetch() -> tuple[Batch, float]:
        nonlocal fetched
        with mark("data"):
            start = time.perf_counter()
            try:
                host_batch = next(batches)
            except StopIteration:
                raise RuntimeError(
                    f"the batches ran out after {fetched}: Training.batches must be endless (a DataLoader over an "
                    "endless sampler, itertools.cycle): warm-up, timed and counted iterations all take one"
                ) from None
            fetched += 1
            waited = time.perf_counter() - start
            if slice_for_rank is not None:
                host_batch = slice_for_rank(host_batch)
            return tuple(move(t) for t in host_batch), waited

    return fetch


def stepper(
    training: Training, model: torch.nn.Module, device: torch.device, optimization: Optimization, mark: PhaseMarker
) -> Callable[[Batch], torch.Tensor]:
    """Returns step(batch) -> detached loss: forward, backward and optimizer, each an NVTX phase.

    With ``compile`` the loss function (model and loss together) is compiled; with accumulation the
    batch is split into micro-batches whose scaled gradients add up before one optimizer step.
    A workload with its own ``step`` (a kernel, no training) gets that, as the forward phase."""
    own_step = training.step
    if own_step is not None:

        def kernel_step(batch: Batch) -> torch.Tensor:
            with mark("forward"):
                return own_step(batch)

        return kernel_step
    optimizer = training.optimizer
    if optimizer is None:
        raise ValueError("a workload without an optimizer must give its own step")
    scaler = torch.amp.GradScaler(device.type) if optimization.grad_scaler else None
    loss_fn = training.loss
    if optimization.compile:
        mode = None if optimization.compile_mode == "default" else optimization.compile_mode
        loss_fn = torch.compile(training.loss, mode=mode)
    graphs = optimization.compile and optimization.compile_mode in ("reduce-overhead", "max-autotune")
    parts = optimization.accumulation_steps
    no_sync = getattr(model, "no_sync", None) if (optimization.ddp or {}).get("no_sync") else None

    def forward_backward(batch: Batch, last: bool = True) -> torch.Tensor:
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        # DDP with no_sync: the gradients are all-reduced once, in the last micro-batch's backward
        unsynced = no_sync() if no_sync is not None and not last else contextlib.nullcontext()
        with unsynced:
            with mark("forward"), autocast(device, optimization):
                loss = loss_fn(model, batch)
                if parts > 1:
                    loss = loss / parts
            with mark("backward"):
                (scaler.scale(loss) if scaler else loss).backward()
        return loss.detach().clone() if graphs else loss.detach()

    def step(batch: Batch) -> torch.Tensor:
        if parts == 1:
            loss = forward_backward(batch)
        else:
            micro_batches = list(zip(*(t.chunk(parts) for t in batch), strict=True))
            last = len(micro_batches) - 1
            loss = torch.stack([forward_backward(tuple(m), i == last) for i, m in enumerate(micro_batches)]).sum()
        with mark("optimizer"):
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if optimization.sync_every_step:
            loss.item()  # what a loop that logs every step's loss does
        return loss

    return step
