"""GPT-2 124M (12 layers, 12 heads, 768 wide, context 1024, vocabulary 50257) trained on the standard
library's source (see ``workloads/text.py``), with a tiny configuration for the CPU path.

Workload options (``Optimization.options``): ``attention`` (naive, sdpa, flash, cudnn), ``optimizer``
(for_loop, foreach, fused, adamw_8bit), ``vocab_multiple`` (pad the vocabulary to a multiple, 64: 50257 -> 50304),
``batch_scale`` (multiply the batch), ``checkpointing`` (activation checkpointing), ``param_dtype``
(train the weights and AdamW's moments in that dtype: "bfloat16" saves the casts and half the
optimizer's bytes; "float16" without loss scaling is a known way to break it), ``residual_dtype`` (the
residual stream's dtype, by default the weights': "bfloat16" halves the bytes its norms and adds move
while the weights and optimizer stay float32), ``cross_entropy`` ("torch"; "triton": the kernels of
``custom_kernels/fused_cross_entropy.py``; "triton_linear": the output layer and the loss as one function of that
module, the logits' gradient computed in the forward pass), ``separate_qkv`` (three attention input
projections instead of one packed), ``mlp`` (how the MLP and its gradients run, one of
``transformer.MLPS``) and ``linear`` (which GEMMs the linear layers and the output layer run, one of
``transformer.LINEARS``; "tuned": the fastest algorithm for each shape, timed at its first call) and
``activation_offload`` (the trunk's saved activations go to pinned host memory during the forward pass
and come back for the backward pass: ``torch.autograd.graph.save_on_cpu``), ``float8`` ("tensorwise" or
"rowwise": the linear layers' GEMMs in FP8 with torchao, ``workloads/float8.py``).

``GPT2Medium`` is GPT-2 medium (24 layers, 16 heads, 1024 wide: 355M parameters), where the memory
cases have something to save; ``GPT2XL`` is GPT-2 XL (48 layers, 25 heads, 1600 wide: 1.56B
parameters), chosen so that the model's states outweigh its activations, as sharded data parallelism needs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset
from trainperf import FULL, TINY, Batch, Metric, Optimization, Training, merge_options

from workloads import text
from workloads.sampling import endless_loader
from workloads.transformer import (
    Trunk,
    TrunkConfig,
    init_weights,
    linear_layer,
    padded,
    token_training,
)

OPTIONS = {
    "attention": "naive",
    "optimizer": "for_loop",
    "vocab_multiple": 1,
    "batch_scale": 1,
    "checkpointing": False,
    "param_dtype": "float32",
    "residual_dtype": None,
    "separate_qkv": False,  # three attention input projections instead of one (workloads/transformer.py)
    "mlp": "torch",  # one of transformer.MLPS
    "linear": "torch",  # one of transformer.LINEARS
    "cross_entropy": "torch",  # "triton" or "triton_linear": custom_kernels/fused_cross_entropy.py
    "activation_offload": False,  # the trunk's saved activations in pinned host memory (save_on_cpu)
    "float8": None,  # "tensorwise" or "rowwise": the linear layers' GEMMs in FP8 (workloads/float8.py)
}


@dataclass(frozen=True)
class GPTConfig:
    layers: int
    heads: int
    width: int
    context: int
    vocab_size: int
    batch_size: int  # sequences per iteration before batch_scale
    lr: float
    warmup: int  # default warm-up iterations
    iters: int  # default timed iterations
    corpus_chars: int  # characters of standard-library source to tokenize
    eval_windows: int  # held-out sequences for the validation loss


CONFIGS = {
    TINY: GPTConfig(2, 2, 64, 64, 1024, 8, 2.5e-3, 3, 20, 1_000_000, 32),
    FULL: GPTConfig(12, 12, 768, 1024, 50257, 8, 6e-4, 5, 20, 8_000_000, 32),
}
MEDIUM_CONFIGS = {TINY: CONFIGS[TINY], FULL: GPTConfig(24, 16, 1024, 1024, 50257, 8, 3e-4, 5, 20, 8_000_000, 32)}
# 4 sequences: 2 per GPU where two processes train data-parallel, the small micro-batch of sharded training.
# The tiny size trains 32, as the data-parallel ladder's does: at 8 the tiny model, trained by FSDP with bf16
# weights in compute, ended 0.17 above the float32 weights' validation loss after 20 iterations.
XL_CONFIGS = {
    TINY: replace(CONFIGS[TINY], batch_size=32),
    FULL: GPTConfig(48, 25, 1600, 1024, 50257, 4, 2e-4, 5, 20, 8_000_000, 32),
}


class GPT(nn.Module):
    def __init__(
        self,
        config: GPTConfig,
        trunk: TrunkConfig,
        vocab_rows: int,
        residual_dtype: str | None = None,
        activation_offload: bool = False,
    ) -> None:
        super().__init__()
        self.activation_offload = activation_offload
        self.residual_dtype = None if residual_dtype is None else getattr(torch, residual_dtype)
        self.embed = nn.Embedding(vocab_rows, config.width)
        self.position = nn.Embedding(config.context, config.width)
        self.trunk = Trunk(trunk)
        self.head = linear_layer(trunk)(config.width, vocab_rows, bias=False)
        self.head.weight = self.embed.weight  # tied, as in GPT-2
        init_weights(self, config.layers)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden_states(tokens))  # type: ignore[no-any-return]

    def hidden_states(self, tokens: torch.Tensor) -> torch.Tensor:
        """What the output layer reads: the trunk's output, batch x sequence x width."""
        positions = torch.arange(tokens.size(1), device=tokens.device)
        residual = self.embed(tokens) + self.position(positions)
        if self.residual_dtype is not None:
            residual = residual.to(self.residual_dtype)
        with self._saved_activations(residual.device):
            return self.trunk(residual)  # type: ignore[no-any-return]

    def _saved_activations(self, device: torch.device) -> contextlib.AbstractContextManager[object]:
        """Where autograd keeps what the backward pass needs: on the device, or offloaded to pinned host
        memory (pinned only where there is a GPU to copy from)."""
        if not self.activation_offload:
            return contextlib.nullcontext()
        return torch.autograd.graph.save_on_cpu(pin_memory=device.type == "cuda")


def next_token_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    inputs, targets = batch
    logits = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def fused_next_token_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """``next_token_loss`` through the Triton cross-entropy kernel (imported here: Triton is needed only
    by the cases that ask for it)."""
    from custom_kernels.fused_cross_entropy import fused_cross_entropy

    inputs, targets = batch
    return fused_cross_entropy(model(inputs).flatten(0, 1), targets.flatten())


def linear_next_token_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """``next_token_loss`` with the output layer and the loss as one function whose kernel computes the
    logits' gradient in the forward pass (``custom_kernels/fused_cross_entropy.py``)."""
    from custom_kernels.fused_cross_entropy import linear_cross_entropy

    assert isinstance(model, GPT), "the output layer and the loss are fused for GPT's own module"
    inputs, targets = batch
    hidden = model.hidden_states(inputs).flatten(0, 1)
    return linear_cross_entropy(hidden, model.head.weight, targets.flatten(), model.trunk.config.tuned)


class NextTokens(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Item k: training window ``k % n`` as (tokens, the same shifted by one)."""

    def __init__(self, windows: torch.Tensor) -> None:
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.windows[k % len(self.windows)]
        return window[:-1], window[1:]


class GPT2:
    """GPT-2 next-token prediction; metric: validation loss (nats per token) on held-out windows."""

    name = "gpt2"
    metric = Metric("val_loss", higher_is_better=False, default_tolerance=0.15, min_gain=0.15)
    configs = CONFIGS

    def iterations(self, size: str) -> tuple[int, int]:
        config = self.configs[size]
        return config.warmup, config.iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = self.configs[size]
        options = merge_options(OPTIONS, optimization.options, optimization.name)
        trunk = TrunkConfig(
            config.layers,
            config.heads,
            config.width,
            config.context,
            causal=True,
            attention=options["attention"],
            checkpointing=options["checkpointing"],
            separate_qkv=options["separate_qkv"],
            mlp=options["mlp"],
            linear=options["linear"],
        )
        vocab_rows = padded(config.vocab_size, options["vocab_multiple"])
        model = GPT(config, trunk, vocab_rows, options["residual_dtype"], options["activation_offload"])
        model = model.to(device=device, dtype=getattr(torch, options["param_dtype"]))
        converted_weights = 0
        if options["float8"] is not None:
            from workloads.float8 import fp8_weights, to_float8

            converted_weights = fp8_weights(model)
            to_float8(model, options["float8"])
        ids = text.token_ids(config.corpus_chars, config.vocab_size)
        train, held_out = text.split_windows(ids, config.context + 1)
        batch_size = config.batch_size * options["batch_scale"]
        loader = endless_loader(NextTokens(train), batch_size, optimization, device)
        evaluation = held_out[: config.eval_windows].to(device)

        def evaluate(trained: nn.Module) -> float:
            losses = [
                next_token_loss(trained, (chunk[:, :-1], chunk[:, 1:])) for chunk in evaluation.split(config.batch_size)
            ]
            return torch.stack(losses).float().mean().item()

        losses = {"torch": next_token_loss, "triton": fused_next_token_loss, "triton_linear": linear_next_token_loss}
        if options["cross_entropy"] not in losses:
            raise ValueError(f"cross_entropy must be one of {tuple(losses)}, got {options['cross_entropy']!r}")
        loss = losses[options["cross_entropy"]]
        training = token_training(model, config, options["optimizer"], loader, loss, evaluate, batch_size)
        if converted_weights and training.flops_per_iteration:  # 6 FLOPs per weight and token: 3 GEMMs
            training.fp8_flop_share = (
                6.0 * converted_weights * training.samples_per_iteration / training.flops_per_iteration
            )
        return training


class GPT2Medium(GPT2):
    """GPT-2 medium (355M parameters) at the full size; the tiny size is GPT-2's."""

    name = "gpt2_medium"
    configs = MEDIUM_CONFIGS


class GPT2XL(GPT2):
    """GPT-2 XL (1.56B parameters) at the full size; the tiny size is GPT-2's, at 32 sequences."""

    name = "gpt2_xl"
    configs = XL_CONFIGS
