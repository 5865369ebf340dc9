"""GPT-2 XL trained with sharded data parallelism, gated on per-GPU peak memory: one process per GPU over
NCCL (two gloo processes on the CPU), each training its slice of the single-process ``reference``'s
global batch, so the loss must match it.

Why GPT-2 XL (1.56B parameters, ``workloads.gpt2.GPT2XL``) at 2 sequences per GPU: sharding divides the
model's states (float32 weights and gradients, AdamW's two moments: 16 bytes a parameter, 23 GiB here,
plus DDP's 4-byte gradient buckets) among the GPUs and leaves each GPU's activations whole. It pays
where the states outweigh the activations: large models at small micro-batches, as it is used. ``ddp``
is the unsharded point of comparison; the others keep its batch and recipe and shard more:
ZeRO-1 the optimizer's moments, FSDP2 the weights and gradients too.
No speedup or memory ratio is declared until measured on two GPUs.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.gpt2 import GPT2XL
from workloads.ladders.gpt2_memory import BASE  # the memory ladder's fast eager recipe

FSDP_BF16 = {"param_dtype": "bfloat16"}  # bf16 weights in compute, gradients reduced in float32

reference = Optimization(REFERENCE, tf32=True, amp_dtype="bfloat16", options=BASE)
ddp = reference.but("ddp", ddp={})
# ZeroRedundancyOptimizer: each rank keeps the AdamW moments of its share of the parameters
zero1 = reference.but("zero1", ddp={"zero": True})
# FSDP2 fully_shard: each rank keeps its shard of the weights, gradients and moments and gathers a block's
# weights for its forward pass, and again for its backward pass (full_shard) or keeps them between the two
fsdp_full_shard = reference.but("fsdp_full_shard", ddp={"fsdp": "full_shard", **FSDP_BF16})
fsdp_shard_grad_op = reference.but("fsdp_shard_grad_op", ddp={"fsdp": "shard_grad_op", **FSDP_BF16})
# the shards, their gradients and the optimizer's step in pinned host memory
fsdp_cpu_offload = reference.but(
    "fsdp_cpu_offload",
    ddp={"fsdp": "full_shard", **FSDP_BF16, "cpu_offload": True},
    needs_cuda="FSDP's CPU offload moves the shards between a GPU and pinned host memory",
)
LADDER = Ladder(GPT2XL(), [reference, ddp, zero1, fsdp_full_shard, fsdp_shard_grad_op, fsdp_cpu_offload])
