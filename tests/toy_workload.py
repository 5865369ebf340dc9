"""A toy workload for the plugin's own end-to-end tests: logistic regression on separable points.

``options``: ``sleep_ms`` adds host time to every step (a slower case), and ``SETTLE_MS`` more of it,
``shuffle_labels`` trains on random labels (a broken optimization whose accuracy drops), ``shuffle_once``
names a file: the build that finds it deletes it and trains on random labels (an accuracy that fails once),
``extra_calls`` makes that many more calls in every step (more host work, of no time to tell),
``reader_calls`` makes that many calls reading each batch (a reader of many cheap calls, as the digits
reference's), ``images`` counts its samples as images, ``slow_once`` names a file: the build that finds it
deletes it and adds ``slow_once_ms`` (20 by default) of host time to every step (a case that looks slower
once), ``raise_in`` ("build", "step" or "evaluate") raises a ValueError there (a broken case), or with
"interrupt" a KeyboardInterrupt in its build (Ctrl-C), ``hang_s`` sleeps that long in its second step (a hung
case; ``calm_once`` names a file: the build that finds it deletes it and does not hang, so that only the
fresh processes after the test process's run hang), ``out_of_memory`` raises torch's out-of-memory error
from its third step, ``build_once`` names a file:
the build that finds it deletes it, and a build that finds none raises a ValueError (a case that cannot be
built again, as one whose fresh process runs out of GPU memory beside the test process); in a data-parallel
run, ``fail_on_ranks`` raises on those ranks and ``hang_on_ranks`` sleeps there for a minute, from the second
step; ``extra_ops`` adds that many tensor ops to each step and ``host_reads`` that many reads of its loss on
the host (``.item()``): more work of the same time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from trainperf import Metric, Optimization, Training
from trainperf.spec.workload import Batch

# A sleeping step sleeps this much longer: after a 10-ms sleep its ops ran at one of two speeds, 7% apart
# between fresh processes on a 2-core machine, after 30 ms at one (research/evidence/cpu-timing-noise.md)
SETTLE_MS = 20.0


def _found_once(name: str | None) -> bool:
    """Whether the file ``name`` was there, deleting it: only the first build that looks finds it (the ranks of
    a data-parallel run look at once; one of them deletes it)."""
    if name is None:
        return False
    try:
        Path(name).unlink()
    except FileNotFoundError:
        return False
    return True


class Toy:
    name = "toy"
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.05, floor=0.6)

    def iterations(self, size: str) -> tuple[int, int]:
        return 2, 15

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        # One intra-op thread: its ops are too small to split, and a second thread that has to be scheduled
        # beside a busy process stalls every step by a scheduler time slice (research/evidence/cpu-timing-noise.md)
        torch.set_num_threads(1)
        raise_in = optimization.options.get("raise_in")
        if raise_in == "interrupt":
            raise KeyboardInterrupt
        if raise_in == "build":
            raise ValueError("toy build failed\nsecond line of the message")
        generator = torch.Generator().manual_seed(0)
        points = torch.randn(1024, 8, generator=generator)
        labels = (points @ torch.randn(8, generator=generator) > 0).long()
        built_once = optimization.options.get("build_once")
        if built_once is not None:
            if not Path(built_once).exists():
                raise ValueError(f"toy built once only: {built_once} is gone")
            Path(built_once).unlink()
        sleep_ms = float(optimization.options.get("sleep_ms", 0.0))
        if _found_once(optimization.options.get("slow_once")):
            sleep_ms += float(optimization.options.get("slow_once_ms", 20.0))
        sleep_s = (sleep_ms + SETTLE_MS) / 1000.0 if sleep_ms else 0.0
        shuffle = bool(optimization.options.get("shuffle_labels", False))
        shuffle = shuffle or _found_once(optimization.options.get("shuffle_once"))
        extra_calls = range(int(optimization.options.get("extra_calls", 0)))
        extra_ops = range(int(optimization.options.get("extra_ops", 0)))  # tensor ops added to each step
        host_reads = range(int(optimization.options.get("host_reads", 0)))  # loss.item() added to each step
        reader_calls = range(int(optimization.options.get("reader_calls", 0)))
        out_of_memory = bool(optimization.options.get("out_of_memory", False))
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else None
        fails = rank in optimization.options.get("fail_on_ranks", ())
        hangs = rank in optimization.options.get("hang_on_ranks", ())
        hang_s = 0.0 if _found_once(optimization.options.get("calm_once")) else optimization.options.get("hang_s", 0.0)
        steps = [0]

        def batches() -> Iterator[Batch]:
            while True:
                for _ in reader_calls:
                    abs(0)
                index = torch.randint(0, len(labels), (64,), generator=generator)
                targets = torch.randint(0, 2, (64,), generator=generator) if shuffle else labels[index]
                yield points[index], targets

        graph_break = bool(optimization.options.get("graph_break", False))  # a print() in the compiled code
        keyed = bool(optimization.options.get("step_key", False))  # a string that changes every step: a guard fails

        def plain_loss(model: nn.Module, points: torch.Tensor, labels: torch.Tensor, key: str) -> torch.Tensor:
            logits = model(points)
            if graph_break:
                print("toy: logits computed")
            if keyed and key.endswith("0"):
                logits = logits * 1.0
            return F.cross_entropy(logits, labels)

        # the user's own torch.compile, eager backend: dynamo's work without a compiler's time
        compiled_loss = torch.compile(plain_loss, backend="eager") if optimization.options.get("compiled") else None

        def loss(model: nn.Module, batch: Batch) -> torch.Tensor:
            steps[0] += 1
            if out_of_memory and steps[0] >= 3:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (toy)")
            if steps[0] == 2:
                time.sleep(float(hang_s))
            if raise_in == "step" and steps[0] >= 2:
                raise ValueError(f"toy step {steps[0]} failed")
            if fails and steps[0] >= 2:
                raise RuntimeError(f"toy failure on rank {rank}")
            time.sleep(60.0 if hangs and steps[0] >= 2 else sleep_s)
            for _ in extra_calls:
                abs(0)
            if compiled_loss is None and not (graph_break or keyed):  # the toy's own calls, as they were
                value: torch.Tensor = F.cross_entropy(model(batch[0]), batch[1])
            else:
                value = (compiled_loss or plain_loss)(model, batch[0], batch[1], f"step {steps[0]}")
            for _ in extra_ops:
                value = value + 0
            for _ in host_reads:
                value.item()
            return value

        def evaluate(model: nn.Module) -> float:
            if raise_in == "evaluate":
                raise ValueError("toy evaluation failed")
            return (model(points.to(device)).argmax(1) == labels.to(device)).float().mean().item()

        hidden = int(optimization.options.get("hidden", 0))  # a hidden layer this wide: the same ops, more FLOPs
        model = (nn.Sequential(nn.Linear(8, hidden), nn.Linear(hidden, 2)) if hidden else nn.Linear(8, 2)).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            batches=batches(),
            loss=loss,
            evaluate=evaluate,
            samples_per_iteration=64,
            sample_unit="images" if optimization.options.get("images") else "samples",
        )
