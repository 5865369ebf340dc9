"""How fast can one process decode ResNet's training JPEGs: nvJPEG on the GPU (one batched
``decode_jpeg`` call, as the ``gpu_decode`` cases make it) against one CPU core (as each DataLoader
worker of the CPU path does)? The GPU figure includes the host's share of the call, which the
training process's thread spends before it can issue the step.

    PYTHONPATH=$PWD python research/studies/jpeg_decode_rate.py --batches 20     # needs CUDA and torchvision

Prints the host's milliseconds per batch, the milliseconds until the GPU has the batch, and images/s.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
from torchvision.io import ImageReadMode, decode_jpeg

from workloads import images
from workloads.resnet import CONFIGS


def timed(decode_batch: Callable[[], object], batches: int) -> tuple[float, float]:
    """(host seconds per batch, seconds per batch until the device is done)."""
    for _ in range(3):
        decode_batch()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(batches):
        decode_batch()
    host = (time.perf_counter() - start) / batches
    torch.cuda.synchronize()
    return host, (time.perf_counter() - start) / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    config = CONFIGS["full"]
    train = images.split(config.corpus, config.stored_side)[0]
    jpegs = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in train[: config.batch_size]]
    device = torch.device("cuda")
    size = f"{len(jpegs)} JPEGs of {config.stored_side} px"

    host, done = timed(lambda: decode_jpeg(jpegs, mode=ImageReadMode.RGB, device=device), args.batches)
    print(f"GPU (nvJPEG, batched), {size}: host {host * 1e3:.1f} ms, done {done * 1e3:.1f} ms, "
          f"{len(jpegs) / done:,.0f} images/s")  # fmt: skip
    torch.set_num_threads(1)
    host, done = timed(lambda: [decode_jpeg(jpeg, mode=ImageReadMode.RGB) for jpeg in jpegs], args.batches)
    print(f"CPU (one core), {size}: {done * 1e3:.1f} ms, {len(jpegs) / done:,.0f} images/s")


if __name__ == "__main__":
    main()
