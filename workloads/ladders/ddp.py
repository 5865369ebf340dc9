"""GPT-2 trained data-parallel with DistributedDataParallel: one process per GPU over NCCL (two gloo
processes on the CPU), each training its slice of the same global batch as the single-process
``reference``, so the loss must match it; speedup over it divided by the process count is the scaling
efficiency. Cases skip with a reason on a machine with one GPU.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.gpt2 import GPT2


class DataParallelGPT2(GPT2):
    """GPT-2 at twice the batch of the ladder's, so that every process keeps a slice of it."""

    name = "gpt2_ddp"


# bf16, SDPA, fused AdamW, padded vocabulary, no host sync: the ladder's fast eager case at a global batch of
# 32 sequences (16 per GPU on two), where an eager step is bound by the GPU rather than by kernel launches
BASE_OPTIONS = {"attention": "sdpa", "optimizer": "fused", "vocab_multiple": 64, "batch_scale": 4}
reference = Optimization(REFERENCE, tf32=True, amp_dtype="bfloat16", options=BASE_OPTIONS)
ddp_reference = reference.but("ddp_reference", ddp={}, min_speedup={"cuda": 1.2})
bucket_cap = reference.but("bucket_cap", ddp={"bucket_cap_mb": 100}, min_speedup={"cuda": 1.2})
grad_as_bucket_view = reference.but(
    "grad_as_bucket_view", ddp={"gradient_as_bucket_view": True}, min_speedup={"cuda": 1.2}
)
bf16_compress_hook = reference.but(
    "bf16_compress_hook",
    ddp={"comm_hook": "bf16_compress"},
    needs_cuda="PyTorch's bf16 compression hook needs NCCL",
    min_speedup={"cuda": 1.2},
)
static_graph = reference.but("static_graph", ddp={"static_graph": True}, min_speedup={"cuda": 1.2})
# two micro-batches per process: all-reduced after each, or once with no_sync
sync_accumulation = reference.but("sync_accumulation", ddp={}, accumulation_steps=2)
no_sync_accumulation = reference.but("no_sync_accumulation", ddp={"no_sync": True}, accumulation_steps=2)
# sharded data parallelism has its own ladder, on a model whose states outweigh its activations:
# workloads/ladders/sharded.py

LADDER = Ladder(
    DataParallelGPT2(),
    [
        reference,
        ddp_reference,
        bucket_cap,
        grad_as_bucket_view,
        bf16_compress_hook,
        static_graph,
        sync_accumulation,
        no_sync_accumulation,
    ],
)
