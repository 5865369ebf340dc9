"""The packed QKV projection with its Triton backward against PyTorch's autograd, in Triton's
interpreter where there is no GPU (``tests/conftest.py`` sets ``TRITON_INTERPRET=1`` there)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
from models.fused_qkv import pack_heads_and_bias_grad, packed_heads

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HEADS = 2


def _leaves(batch: int, length: int, width: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(length)
    shapes = [(batch, length, width), (3 * width, width), (3 * width,)]
    return [torch.randn(shape, generator=generator).to(DEVICE).requires_grad_() for shape in shapes]


def _torch_heads(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> list[torch.Tensor]:
    batch, length, width = x.shape
    return [
        t.view(batch, length, HEADS, width // HEADS).transpose(1, 2) for t in F.linear(x, weight, bias).chunk(3, -1)
    ]


@pytest.mark.parametrize("batch,length", [(2, 32), (3, 37)], ids=["whole-tiles", "partial-tiles"])
def test_heads_and_gradients_match_torch(batch: int, length: int) -> None:
    ours = _leaves(batch, length, 64)
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    mine, expected = packed_heads(*ours, HEADS), _torch_heads(*theirs)
    # contiguous upstream gradients, as attention kernels give them, and one strided
    upstream = [torch.randn(t.shape).to(DEVICE) for t in expected]
    upstream[2] = upstream[2].transpose(1, 2).contiguous().transpose(1, 2)
    sum((a * g).sum() for a, g in zip(mine, upstream, strict=True)).backward()  # type: ignore[union-attr]
    sum((a * g).sum() for a, g in zip(expected, upstream, strict=True)).backward()  # type: ignore[union-attr]
    for a, b in zip(mine, expected, strict=True):
        torch.testing.assert_close(a, b)
    for a, b in zip(ours, theirs, strict=True):
        assert a.grad is not None and b.grad is not None
        torch.testing.assert_close(a.grad, b.grad, atol=1e-4, rtol=1e-4)


def test_a_head_width_that_is_not_a_power_of_two_is_refused() -> None:
    grads = tuple(torch.zeros(1, 2, 4, 48, device=DEVICE) for _ in range(3))
    with pytest.raises(ValueError, match="head width must be a power of two for this kernel, got 48"):
        pack_heads_and_bias_grad(grads)  # type: ignore[arg-type]
