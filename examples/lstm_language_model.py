"""A character-level LSTM language model, as a user would bring one: bytes of Python's own standard
library source, an embedding, a two-layer LSTM and a linear read-out, AdamW, the loss read every step.

Small batches of short sequences: each step launches many small kernels, so its time rides on the host
(a launch-bound case). Metric: validation loss (nats per byte) on held-out windows.
"""

from __future__ import annotations

import functools
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from trainperf import FULL, REFERENCE, TINY, Ladder, Metric, Optimization, Training

VOCAB = 256  # bytes


@dataclass(frozen=True)
class Size:
    width: int
    layers: int
    context: int
    batch: int
    corpus_bytes: int
    warmup: int
    iters: int


SIZES = {TINY: Size(64, 1, 32, 16, 200_000, 3, 20), FULL: Size(512, 2, 128, 32, 4_000_000, 10, 50)}


def corpus(size: int) -> torch.Tensor:
    """The first ``size`` bytes of the standard library's modules, in sorted path order."""
    chunks, total = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        data = path.read_bytes()
        chunks.append(data)
        total += len(data)
        if total >= size:
            break
    return torch.frombuffer(bytearray(b"".join(chunks)[:size]), dtype=torch.uint8).long()


class CharLSTM(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, size.width)
        self.lstm = nn.LSTM(size.width, size.width, size.layers, batch_first=True)
        self.out = nn.Linear(size.width, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.out(hidden)  # type: ignore[no-any-return]


def next_byte_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    inputs, targets = batch
    return F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())


class LSTMLanguageModel:
    name = "lstm_lm"
    metric = Metric("val_loss", higher_is_better=False, default_tolerance=0.15, min_gain=0.15)

    def iterations(self, size: str) -> tuple[int, int]:
        return SIZES[size].warmup, SIZES[size].iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = SIZES[size]
        data = corpus(config.corpus_bytes)
        windows = data[: len(data) // (config.context + 1) * (config.context + 1)].view(-1, config.context + 1)
        held_out, train = windows[::10].to(device)[:64], windows[torch.arange(len(windows)) % 10 != 0]
        generator = torch.Generator().manual_seed(0)

        def batches() -> Iterator[tuple[torch.Tensor, ...]]:
            while True:
                rows = train[torch.randint(0, len(train), (config.batch,), generator=generator)]
                yield rows[:, :-1], rows[:, 1:]

        def evaluate(model: nn.Module) -> float:
            return float(next_byte_loss(model, (held_out[:, :-1], held_out[:, 1:])))

        torch.manual_seed(0)
        model = CharLSTM(config).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3),
            batches=batches(),
            loss=next_byte_loss,
            evaluate=evaluate,
            samples_per_iteration=config.batch * config.context,
            sample_unit="tokens",
        )


reference = Optimization(REFERENCE, sync_every_step=True)  # fp32, the loss read every step as a log line does
tf32 = reference.but("tf32", tf32=True)
amp_bf16 = tf32.but("amp_bf16", amp_dtype="bfloat16")
no_host_sync = amp_bf16.but("no_host_sync", sync_every_step=False)

LADDER = Ladder(LSTMLanguageModel(), [reference, tf32, amp_bf16, no_host_sync])


@functools.cache
def cpu_runs_bf16_lstm() -> bool:
    """Whether this CPU runs an LSTM under bf16 autocast: oneDNN, which runs it, fails to create its
    primitive on a CPU without native bf16 instructions (AVX2 alone), where other bf16 layers run."""
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            nn.LSTM(4, 4)(torch.zeros(1, 1, 4))
    except RuntimeError:
        return False
    return True
