"""How much does ResNet's held-out accuracy swing between runs of the same training, evaluated through
batch norm's running averages as they stand after training, and after ``recalibrate_batch_norm``?
Trains the reference case from several seeds (the weights' start varies, the data does not) and
evaluates each model both ways.

    PYTHONPATH=$PWD python research/studies/batch_norm_spread.py --seeds 8           # the tiny size, on the CPU
    PYTHONPATH=$PWD python research/studies/batch_norm_spread.py --seeds 8 --full    # the suite's size, on the GPU

Prints each seed's two accuracies, then the mean and standard deviation of each way.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from trainperf import FULL, TINY, Optimization

from workloads import images
from workloads.resnet import CALIBRATION_IMAGES, CONFIGS, Vision, recalibrate_batch_norm


def trained_accuracies(seed: int, size: str, device: torch.device) -> tuple[float, float]:
    """(accuracy through the running averages, accuracy after recalibration) of one training."""
    config = CONFIGS[size]
    torch.manual_seed(seed)
    training = Vision().build(device, size, Optimization("reference"))
    model, batches, optimizer = training.model, iter(training.batches), training.optimizer
    assert optimizer is not None
    model.train()
    for _ in range(config.warmup + config.iters):
        loss = training.loss(model, tuple(x.to(device) for x in next(batches)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    train, _, test, test_labels = images.split(config.corpus, config.stored_side)
    held_out = images.held_out_tensor(test, config.side).to(device)
    labels = torch.tensor(test_labels, device=device)
    calibration = images.held_out_tensor(train[:CALIBRATION_IMAGES], config.side)
    model.eval()
    with torch.no_grad():
        plain = accuracy(model, held_out, labels, config.batch_size)
        recalibrate_batch_norm(model, calibration, config.batch_size, channels_last=False)
        return plain, accuracy(model, held_out, labels, config.batch_size)


def accuracy(model: torch.nn.Module, pixels: torch.Tensor, labels: torch.Tensor, batch_size: int) -> float:
    predictions = torch.cat([model(chunk).argmax(1) for chunk in pixels.split(batch_size)])
    return (predictions == labels).float().mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--full", action="store_true", help="the suite's size (needs CUDA)")
    args = parser.parse_args()
    device = torch.device("cuda" if args.full else "cpu")
    results = [trained_accuracies(seed, FULL if args.full else TINY, device) for seed in range(args.seeds)]
    for seed, (plain, recalibrated) in enumerate(results):
        print(f"seed {seed}: running averages {plain:.3f}, recalibrated {recalibrated:.3f}", flush=True)
    for name, values in (("running averages", [r[0] for r in results]), ("recalibrated", [r[1] for r in results])):
        print(f"{name}: mean {statistics.fmean(values):.3f}, sd {statistics.stdev(values):.3f}")


if __name__ == "__main__":
    main()
