"""GPT-2 medium's memory ladder: each case keeps the reference's knobs and adds one memory saver; gated
on peak memory against the reference of the same run, and allowed to be slower by what it trades.

GPT-2 medium (355M parameters, workloads.gpt2.GPT2Medium) rather than 124M: its weights, gradients and
AdamW moments take 5.7 GB in float32 and its activations at 8 sequences of 1,024 tokens most of the rest,
so that each saver has bytes to save. The reference is the suite's fast eager recipe (bf16 autocast,
SDPA, fused AdamW, padded vocabulary). Declared ratios sit just above the peaks measured on the H200
(deterministic: equal in every run) and minimum speedups about 10% below the lowest measured
(research/evidence/h200-memory-ladder.md).
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads import float8
from workloads.gpt2 import GPT2Medium

BASE = {"attention": "sdpa", "optimizer": "fused", "vocab_multiple": 64}
OFFLOAD_NEEDS_CUDA = "offloading to pinned host memory saves device memory only where there is a device"

reference = Optimization(REFERENCE, tf32=True, amp_dtype="bfloat16", options=BASE)
# recompute each block's activations in the backward pass instead of keeping them
activation_checkpointing = reference.but(
    "activation_checkpointing",
    options={**BASE, "checkpointing": True},
    max_memory_ratio={"cuda": 0.6},  # 0.572 measured: 8,997 of 15,731 MiB
    min_speedup={"cuda": 0.43},  # 0.48-0.62x measured: the recomputed forward pass, on a noisy reference
)
# keep them in pinned host memory: copied out in the forward pass, back in the backward pass
activation_offload = reference.but(
    "activation_offload",
    options={**BASE, "activation_offload": True},
    needs_cuda=OFFLOAD_NEEDS_CUDA,
    max_memory_ratio={"cuda": 0.55},  # 0.521 measured: 8,196 of 15,731 MiB
    min_speedup={"cuda": 0.13},  # 0.15-0.20x measured: every saved tensor crosses PCIe twice, unhidden
)
# AdamW's two moments in 8 bits (torchao's AdamW8bit); weights and updates stay float32
optimizer_memory = reference.but(
    "optimizer_memory",
    options={**BASE, "optimizer": "adamw_8bit"},
    needs_package=float8.REQUIREMENT,
    max_memory_ratio={"cuda": 0.9},  # 0.872 measured: 13,717 of 15,730 MiB
    min_speedup={"cuda": 0.23},  # 0.26-0.42x measured: torchao's step runs per parameter, host-bound
)
LADDER = Ladder(GPT2Medium(), [reference, activation_checkpointing, activation_offload, optimizer_memory])
