"""The digits CNN ladder: each step keeps the previous ones and adds one optimization.

Speedups are declared for CUDA only: the tiny CPU configuration proves the cases run and learn.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization, usable_cores

from workloads.digits import Digits

WORKERS = max(1, min(12, usable_cores() - 2))  # leave the main process and the GPU feeder a core

# The reference decodes and augments every batch in the main process: it is bound by the host CPU, whose
# speed moves its median between runs and between hosts (research/evidence/h100-trust.md). Its speedups over that
# reference move with the host too: the loader cases' minimum sits below the lowest seen on either GPU's
# hosts (research/evidence/h200-suite-baselines.md).
reference = Optimization(REFERENCE)
dataloader_workers = reference.but("dataloader_workers", num_workers=WORKERS, min_speedup={"cuda": 1.5})
pinned_nonblocking = dataloader_workers.but(
    "pinned_nonblocking", pin_memory=True, non_blocking=True, min_speedup={"cuda": 1.5}
)
amp_bf16 = pinned_nonblocking.but("amp_bf16", amp_dtype="bfloat16", min_speedup={"cuda": 4.0})
# Launch-bound: its iterations alternate between two times.
channels_last = amp_bf16.but("channels_last", channels_last=True, min_speedup={"cuda": 6.0})

LADDER = Ladder(
    Digits(),
    [reference, dataloader_workers, pinned_nonblocking, amp_bf16, channels_last],
)
