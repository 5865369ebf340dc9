"""The BERT-style encoder ladder (masked-language modelling), cumulative like GPT-2's."""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization

from workloads.bert import Bert

reference = Optimization(REFERENCE, sync_every_step=True)  # fp32, naive attention, for-loop AdamW
amp_bf16 = reference.but("amp_bf16", amp_dtype="bfloat16", min_speedup={"cuda": 1.5})
sdpa_flash = amp_bf16.but(
    "sdpa_flash",
    options={"attention": "flash"},
    needs_cuda="the flash attention kernel exists on CUDA only",
    min_speedup={"cuda": 2.0},
)
fused_adamw = amp_bf16.but(
    "fused_adamw", options={"attention": "sdpa", "optimizer": "fused"}, min_speedup={"cuda": 2.0}
)
compiled = fused_adamw.but("compile", compile=True, min_speedup={"cuda": 2.5})
stack = compiled.but(
    "stack",
    tf32=True,
    sync_every_step=False,
    options={**compiled.options, "vocab_multiple": 64},
    min_speedup={"cuda": 3.0},
)

LADDER = Ladder(
    Bert(),
    [reference, amp_bf16, sdpa_flash, fused_adamw, compiled, stack],
)
