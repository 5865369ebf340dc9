"""Data-parallel GPT-2, compiled: the case for scaling efficiency. Each GPU's eager half-batch step in
the data-parallel ladder (``ddp.py``) waits on kernel launches, so two GPUs reach 83-84% of twice one
GPU's throughput (research/evidence/h200x2-ddp.md). Compiled, each step issues fewer and larger kernels.
The single-process reference is compiled too, so that the speedup over it, divided by the process
count, measures scaling alone. No speedup is declared until measured on two GPUs.
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
LADDER = Ladder(CompiledDataParallelGPT2(), [reference, ddp])
