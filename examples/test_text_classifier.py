"""A small text classifier on ``torch.nn.TransformerEncoder``, written as a user writes a test file: the
workload, its ladder and the test in one place, against the public API only.

Many small kernels per step: on a GPU its time is set by launching them more than by running them. The
task: say which of four marker tokens a sequence holds most often. Metric: held-out accuracy.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from trainperf import REFERENCE, TINY, Ladder, Metric, Optimization, Training, TrainPerf

CLASSES = 4  # tokens 0-3 are the markers
VOCAB = 32


def sequences(count: int, length: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens with one marker planted more often than the others; the label is that marker."""
    labels = torch.randint(0, CLASSES, (count,), generator=generator)
    tokens = torch.randint(0, VOCAB, (count, length), generator=generator)
    planted = torch.rand(count, length, generator=generator) < 0.2
    return torch.where(planted, labels[:, None], tokens), labels


class Classifier(nn.Module):
    def __init__(self, width: int, layers: int, length: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.zeros(length, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens) + self.position).mean(1))  # type: ignore[no-any-return]


def classification_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return F.cross_entropy(model(batch[0]), batch[1])


class TextClassifier:
    name = "text_classifier"
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.05, floor=0.5)

    def iterations(self, size: str) -> tuple[int, int]:
        return (3, 30) if size == TINY else (10, 100)

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        width, layers, length, batch = (32, 2, 32, 32) if size == TINY else (128, 4, 64, 64)
        generator = torch.Generator().manual_seed(0)
        tokens, labels = (t.to(device) for t in sequences(64 * batch, length, generator))
        held_tokens, held_labels = (t.to(device) for t in sequences(512, length, generator))
        starts = itertools.cycle(range(0, len(labels), batch))

        def evaluate(model: nn.Module) -> float:
            model.eval()
            with torch.no_grad():
                accuracy = float((model(held_tokens).argmax(1) == held_labels).float().mean())
            model.train()
            return accuracy

        torch.manual_seed(0)
        model = Classifier(width, layers, length).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3),
            batches=((tokens[i : i + batch], labels[i : i + batch]) for i in starts),
            loss=classification_loss,
            evaluate=evaluate,
            samples_per_iteration=batch,
            sample_unit="sequences",
        )


reference = Optimization(REFERENCE)
LADDER = Ladder(
    TextClassifier(),
    [reference, reference.but("tf32", tf32=True), reference.but("amp_bf16", amp_dtype="bfloat16")],
)


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_text_classifier(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
