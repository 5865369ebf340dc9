"""A timm ResNet-50, as a user would bring one: its name, and nothing else.
``trainperf.adapters.from_timm`` builds it with random weights and trains it to tell ten synthetic
pattern classes apart; the metric is the accuracy on held-out images.

Batches of 128 images at 224 x 224 drawn on the GPU: convolutions, a GPU-bound case.
"""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization
from trainperf.adapters import from_timm

reference = Optimization(REFERENCE)  # fp32
tf32 = reference.but("tf32", tf32=True)
amp_bf16 = tf32.but("amp_bf16", amp_dtype="bfloat16", channels_last=True)
compiled = amp_bf16.but("compile", compile=True)

LADDER = Ladder(from_timm("resnet50"), [reference, tf32, amp_bf16, compiled])
