"""A Llama-style language model from transformers, as a user would bring one: its config, and nothing
else. ``trainperf.adapters.from_transformers`` builds it with random weights and trains it on token
sequences from a random Markov chain; the metric is the validation loss on held-out sequences.

About 110M parameters at 1,024 tokens of context. Its fp32 and tf32 steps are GPU-bound; its eager
bf16 step waits on the host that launches its many small kernels, which compiling removes
(research/evidence/h200-adapters.md).
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization
from trainperf.adapters import from_transformers
from transformers import LlamaConfig

CONFIG = LlamaConfig(
    hidden_size=768,
    intermediate_size=2048,
    num_hidden_layers=12,
    num_attention_heads=12,
    num_key_value_heads=4,
    vocab_size=32000,
    max_position_embeddings=1024,
)

reference = Optimization(REFERENCE)  # fp32
tf32 = reference.but("tf32", tf32=True)
amp_bf16 = tf32.but("amp_bf16", amp_dtype="bfloat16")
compiled = amp_bf16.but("compile", compile=True)

LADDER = Ladder(from_transformers(CONFIG), [reference, tf32, amp_bf16, compiled])
