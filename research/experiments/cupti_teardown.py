"""Does a torch.profiler session slow the launch-bound training that follows it in the same process?

Kineto leaves CUPTI attached after a profile unless ``TEARDOWN_CUPTI=1`` (pytorch/pytorch#144455). The
work counter profiles a few iterations of every case; the next case of the same test process is timed
after it. This times a small launch-bound step (examples/test_text_classifier.py's model, bf16) in
blocks before and after one profile of three iterations, as the work counter takes it:

    python research/experiments/cupti_teardown.py                 # Kineto's default
    TEARDOWN_CUPTI=1 python research/experiments/cupti_teardown.py
"""

from __future__ import annotations

import itertools
import os
import statistics

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from examples.test_text_classifier import Classifier

BLOCKS, ITERS = 5, 100


def main() -> None:
    torch.manual_seed(0)
    model = Classifier(128, 4, 64).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 32, (64, 64), device="cuda")
    labels = torch.randint(0, 4, (64,), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def block() -> float:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(ITERS + 1)]
        for i in range(ITERS):
            events[i].record()
            step()
        events[ITERS].record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in itertools.pairwise(events))

    for _ in range(10):
        step()
    before = [block() for _ in range(BLOCKS)]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    after = [block() for _ in range(BLOCKS)]
    print(
        f"TEARDOWN_CUPTI={os.environ.get('TEARDOWN_CUPTI', '(unset)')} torch {torch.__version__}: "
        f"before {statistics.median(before):.3f} ms, after {statistics.median(after):.3f} ms "
        f"({statistics.median(after) / statistics.median(before) - 1:+.1%}); "
        f"blocks before {[round(x, 2) for x in before]}, after {[round(x, 2) for x in after]}"
    )


if __name__ == "__main__":
    main()
