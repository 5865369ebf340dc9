"""FP8 training of a model's linear layers with torchao's float8 recipes (``convert_to_float8_training``):
each ``nn.Linear`` becomes a ``Float8Linear`` whose three GEMMs (forward, input and weight gradients) run
on FP8 tensor cores (compute capability 8.9 and up), its inputs scaled per tensor ("tensorwise") or per
row ("rowwise"), with torch.compile fusing the casts. Weights, gradients and AdamW stay in float32.

Left in bf16: the output layer (tied to the embedding, and where the loss is most sensitive) and any layer
whose sizes are not multiples of 16, which FP8 GEMMs need. torchao 0.18.0 is the release built for
torch 2.11; on a GPU machine that cannot reach PyPI, carry its wheel and install it with
``pip install --no-deps torchao-0.18.0-*.whl``.
"""

from __future__ import annotations

from torch import nn

RECIPES = ("tensorwise", "rowwise")
REQUIREMENT = "torchao==0.18.0"


def fp8_eligible(module: nn.Module, name: str) -> bool:
    """A linear layer FP8 can take: not the output layer, both sizes multiples of 16."""
    if not isinstance(module, nn.Linear) or name == "head":
        return False
    return module.in_features % 16 == 0 and module.out_features % 16 == 0


def fp8_weights(model: nn.Module) -> int:
    """Weights whose matmuls the conversion moves to FP8."""
    return sum(m.weight.numel() for name, m in model.named_modules() if fp8_eligible(m, name))


def to_float8(model: nn.Module, recipe: str) -> None:
    """Swap the eligible linear layers for torchao's ``Float8Linear`` with ``recipe``'s scaling, in place."""
    if recipe not in RECIPES:
        raise ValueError(f"float8 must be one of {RECIPES}, got {recipe!r}")
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except ImportError as error:
        raise ModuleNotFoundError(f"FP8 training needs torchao: pip install '{REQUIREMENT}'") from error
    if fp8_weights(model) == 0:  # a case that claims FP8 and converts nothing would time bf16 under its name
        raise ValueError("float8: no linear layer to convert (each needs both sizes multiples of 16)")
    config = Float8LinearConfig.from_recipe_name(recipe)
    convert_to_float8_training(model, config=config, module_filter_fn=fp8_eligible)
