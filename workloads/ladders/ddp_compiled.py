"""Data-parallel GPT-2, compiled: the cases for scaling efficiency. Each GPU's eager half-batch step in
the data-parallel ladder (``ddp.py``) waits on kernel launches, so two GPUs reach 83-84% of twice one
GPU's throughput (research/evidence/h200x2-ddp.md). Compiled, each step issues fewer and larger kernels.
The single-process reference is compiled too, so that the speedup over it, divided by the process
count, measures scaling alone.

``ddp`` measures strong scaling: the processes split the reference's global batch. ``weak_scaling``
measures it as data-parallel training is judged in practice: on two GPUs each keeps the reference's
batch of 32 sequences (a global batch of 64), as the batch per GPU is what fills it. Its loss is held
to the reference's as every case's is: trained on twice the sequences, it may only be better.
``weak_scaling`` declares 1.9x: 95% of twice the reference's throughput on two GPUs, which it reached
on two H200s (research/evidence/h200x2-work-and-torchrun.md). ``ddp`` declares none: strong scaling
stays well below it there.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.ladders.ddp import BASE_OPTIONS, DataParallelGPT2


class CompiledDataParallelGPT2(DataParallelGPT2):
    name = "gpt2_ddp_compiled"


reference = Optimization(REFERENCE, tf32=True, amp_dtype="bfloat16", compile=True, options=BASE_OPTIONS)
# DDP splits the compiled graph at its gradient buckets, so that each bucket's all-reduce can start
# while the backward pass goes on
ddp = reference.but("ddp", ddp={})
# static_graph: DDP's reducer plans its buckets once and skips searching the graph each step; 100 MB
# buckets: five all-reduces of GPT-2's 498 MB of float32 gradients, and five compiled graphs between them
weak_scaling = reference.but(
    "weak_scaling",
    ddp={"static_graph": True, "bucket_cap_mb": 100},
    options={**BASE_OPTIONS, "batch_scale": 8},  # twice the reference's 4
    min_speedup={"cuda": 1.9},
)
LADDER = Ladder(CompiledDataParallelGPT2(), [reference, ddp, weak_scaling])
