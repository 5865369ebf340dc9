"""The transformer trunk shared by the GPT-2 and BERT workloads: pre-norm blocks in plain PyTorch.

Attention comes in the flavours the optimization cases compare: ``naive`` (explicit scores, softmax
and weighted sum, as a first implementation writes it), ``sdpa`` (``scaled_dot_product_attention``,
backend chosen by PyTorch), and ``flash`` or ``cudnn`` (that fused kernel and no other).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.checkpoint import checkpoint
from trainperf import Batch, Training

from workloads import float8

ATTENTION = ("naive", "sdpa", "flash", "cudnn")
FORCED_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
MLPS = {
    "torch": "up-projection, GELU and down-projection as PyTorch computes them",
    "triton_gelu_backward": "GELU's and the bias's gradients in one Triton kernel (custom_kernels/fused_gelu.py)",
    "cublaslt_gelu": "the same, GELU applied in the up-projection GEMM's cuBLASLt epilogue",
    "cublaslt_epilogues": "GELU and GELU's gradient in the GEMMs' cuBLASLt epilogues (custom_kernels/epilogue_mlp.py)",
}
LINEARS = {
    "torch": "nn.Linear",
    "cublaslt_bias_grad": "bias gradients summed in the weight-gradient GEMMs' cuBLASLt epilogue",
    "tuned": "each GEMM runs the fastest algorithm PyTorch and cuBLASLt offer (custom_kernels/tuned_gemm.py)",
}


@dataclass(frozen=True)
class TrunkConfig:
    layers: int
    heads: int
    width: int
    context: int  # longest sequence
    causal: bool  # GPT: each position sees only the past; BERT: the whole sequence
    attention: str = "naive"  # one of ATTENTION
    checkpointing: bool = False  # recompute each block's activations in the backward pass
    # three projections for queries, keys and values instead of one packed: each lands in its own dense
    # tensor, so the attention's gradients need no concatenation back into the packed layout
    separate_qkv: bool = False
    mlp: str = "torch"  # one of MLPS: how the MLP's up-projection, GELU and their gradients run
    linear: str = "torch"  # one of LINEARS: which GEMMs the linear layers run

    @property
    def tuned(self) -> bool:
        """Every GEMM of the linear layers (and of the kernels that take their weights) tuned."""
        return self.linear == "tuned"

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {self.attention!r}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")
        if self.mlp not in MLPS:
            raise ValueError(f"mlp must be one of {tuple(MLPS)}, got {self.mlp!r}")
        if self.linear not in LINEARS:
            raise ValueError(f"linear must be one of {tuple(LINEARS)}, got {self.linear!r}")


class SelfAttention(nn.Module):
    def __init__(self, config: TrunkConfig) -> None:
        super().__init__()
        self.config = config
        if config.separate_qkv:
            self.q, self.k, self.v = (linear_layer(config)(config.width, config.width) for _ in range(3))
        else:
            self.qkv = linear_layer(config)(config.width, 3 * config.width)
        self.out = linear_layer(config)(config.width, config.width)
        if config.causal:
            self.mask: torch.Tensor
            self.register_buffer("mask", torch.ones(config.context, config.context, dtype=torch.bool).tril(), False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        heads = self.config.heads
        projected = (self.q(x), self.k(x), self.v(x)) if self.config.separate_qkv else self.qkv(x).chunk(3, -1)
        q, k, v = (t.view(batch, length, heads, width // heads).transpose(1, 2) for t in projected)
        y = self._attend(q, k, v)
        return self.out(y.transpose(1, 2).reshape(batch, length, width))  # type: ignore[no-any-return]

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        causal = self.config.causal
        if self.config.attention == "naive":
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
            if causal:
                length = q.size(-2)
                scores = scores.masked_fill(~self.mask[:length, :length], float("-inf"))
            return scores.softmax(dim=-1) @ v
        backend = FORCED_BACKENDS.get(self.config.attention)
        if backend is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class MLP(nn.Module):
    def __init__(self, config: TrunkConfig) -> None:
        super().__init__()
        self.up = linear_layer(config)(config.width, 4 * config.width)
        self.down = linear_layer(config)(4 * config.width, config.width)
        self.linear_gelu: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None
        self.epilogue_mlp: Callable[..., torch.Tensor] | None = None
        # the kernels are imported only by the cases that ask for them (Triton, cuBLASLt)
        if config.mlp == "cublaslt_epilogues":
            from custom_kernels.epilogue_mlp import epilogue_mlp

            self.epilogue_mlp = functools.partial(epilogue_mlp, tuned=config.tuned)
        elif config.mlp in ("triton_gelu_backward", "cublaslt_gelu"):
            from custom_kernels.fused_gelu import linear_gelu

            epilogue = config.mlp == "cublaslt_gelu"
            self.linear_gelu = functools.partial(linear_gelu, epilogue=epilogue, tuned=config.tuned)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.epilogue_mlp is not None:
            return self.epilogue_mlp(x, self.up.weight, self.up.bias, self.down.weight, self.down.bias)
        if self.linear_gelu is not None:
            return self.down(self.linear_gelu(x, self.up.weight, self.up.bias))  # type: ignore[no-any-return]
        return self.down(F.gelu(self.up(x), approximate="tanh"))  # type: ignore[no-any-return]


def linear_layer(config: TrunkConfig) -> type[nn.Linear]:
    """``nn.Linear``, or the subclass (same parameters) that ``config.linear`` names."""
    if config.linear == "tuned":
        from custom_kernels.tuned_gemm import TunedLinear

        return TunedLinear
    if config.linear == "cublaslt_bias_grad":
        from custom_kernels.cublaslt_epilogues import EpilogueLinear

        return EpilogueLinear
    return nn.Linear


class Block(nn.Module):
    def __init__(self, config: TrunkConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(config.width)
        self.attention = SelfAttention(config)
        self.norm2 = nn.LayerNorm(config.width)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))  # type: ignore[no-any-return]


class Trunk(nn.Module):
    """The stack of blocks and the final LayerNorm."""

    def __init__(self, config: TrunkConfig) -> None:
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            recompute = self.config.checkpointing and self.training
            x = checkpoint(block, x, use_reentrant=False) if recompute else block(x)
        return self.norm(x)  # type: ignore[no-any-return]


def init_weights(model: nn.Module, layers: int) -> None:
    """GPT-2's initialisation: normal(0, 0.02), output projections scaled down by sqrt(2 * layers)."""
    for name, parameter in model.named_parameters():
        if parameter.dim() < 2:
            if name.endswith("bias"):
                nn.init.zeros_(parameter)
            continue
        std = 0.02 / math.sqrt(2 * layers) if name.endswith(("out.weight", "down.weight")) else 0.02
        nn.init.normal_(parameter, mean=0.0, std=std)


def attention_flops_per_token(layers: int, width: int, context: int) -> float:
    """Forward and backward FLOPs of the attention scores and weighted sums, per token (PaLM's 12 L d T)."""
    return 12.0 * layers * width * context


def transformer_flops_per_token(parameters: int, layers: int, width: int, context: int) -> float:
    """Model FLOPs per trained token: 6 per weight (forward and backward matmuls) plus attention."""
    return 6.0 * parameters + attention_flops_per_token(layers, width, context)


ADAMW_8BIT = "adamw_8bit"


def adamw(model: nn.Module, lr: float, implementation: str) -> torch.optim.Optimizer:
    """AdamW with the chosen implementation: ``for_loop`` (one parameter at a time), ``foreach``
    (multi-tensor kernels), ``fused`` (one fused kernel), or ``adamw_8bit``: torchao's AdamW with both
    moments quantized to 8 bits in blocks of 256 (float32 weights and updates), a quarter of the bytes."""
    hyper: dict[str, Any] = {"lr": lr, "betas": (0.9, 0.95), "weight_decay": 0.1}
    if implementation == ADAMW_8BIT:
        try:
            from torchao.optim import AdamW8bit
        except ImportError as error:
            raise ModuleNotFoundError(f"8-bit AdamW needs torchao: pip install '{float8.REQUIREMENT}'") from error
        quantized: torch.optim.Optimizer = AdamW8bit(model.parameters(), **hyper)
        return quantized
    flags: dict[str, dict[str, Any]] = {
        "for_loop": {"foreach": False, "fused": False},
        "foreach": {"foreach": True, "fused": False},
        "fused": {"foreach": False, "fused": True},
    }
    if implementation not in flags:
        raise ValueError(f"optimizer must be one of {(*flags, ADAMW_8BIT)}, got {implementation!r}")
    return torch.optim.AdamW(model.parameters(), **hyper, **flags[implementation])


def padded(size: int, multiple: int) -> int:
    return math.ceil(size / multiple) * multiple


def costed_parameters(model: nn.Module, vocab_size: int) -> int:
    """Weights that cost FLOPs per token: all but the position table and the vocabulary padding.
    ``model`` has ``embed`` (token) and ``position`` embeddings."""
    embed, position = model.embed, model.position
    assert isinstance(embed, nn.Embedding) and isinstance(position, nn.Embedding)
    total = sum(p.numel() for p in model.parameters())
    return total - position.weight.numel() - (embed.num_embeddings - vocab_size) * embed.embedding_dim


def token_training(
    model: nn.Module,
    config: Any,
    optimizer: str,
    batches: Iterable[Batch],
    loss: Callable[[nn.Module, Batch], torch.Tensor],
    evaluate: Callable[[nn.Module], float],
    batch_size: int,
) -> Training:
    """A language model's training: AdamW, and its tokens and model FLOPs per iteration. ``config`` has
    ``layers``, ``width``, ``context``, ``vocab_size`` and ``lr``."""
    tokens = batch_size * config.context
    parameters = costed_parameters(model, config.vocab_size)
    per_token = transformer_flops_per_token(parameters, config.layers, config.width, config.context)
    return Training(
        model=model,
        optimizer=adamw(model, config.lr, optimizer),
        batches=batches,
        loss=loss,
        evaluate=evaluate,
        samples_per_iteration=tokens,
        flops_per_iteration=per_token * tokens,
        sample_unit="tokens",
    )
