"""The linear + GELU function with its Triton backward against PyTorch's autograd, in Triton's
interpreter where there is no GPU (``tests/conftest.py`` sets ``TRITON_INTERPRET=1`` there)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
from custom_kernels.fused_gelu import linear_gelu

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _leaves(generator: torch.Generator, rows: int, width: int, hidden: int) -> list[torch.Tensor]:
    shapes = [(2, rows, width), (hidden, width), (hidden,)]
    return [(2 * torch.randn(shape, generator=generator)).to(DEVICE).requires_grad_() for shape in shapes]


@pytest.mark.parametrize("rows,hidden", [(64, 128), (37, 200)], ids=["whole-tiles", "partial-tiles"])
def test_outputs_and_gradients_match_torch(rows: int, hidden: int) -> None:
    generator = torch.Generator().manual_seed(rows)
    ours = _leaves(generator, rows, 16, hidden)
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    out = linear_gelu(*ours)
    expected = F.gelu(F.linear(*theirs), approximate="tanh")
    upstream = torch.randn(expected.shape, generator=generator).to(DEVICE)
    (out * upstream).sum().backward()
    (expected * upstream).sum().backward()
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.grad is not None and reference.grad is not None
        torch.testing.assert_close(mine.grad, reference.grad, atol=1e-4, rtol=1e-4)


def test_under_autocast_it_computes_in_bf16_and_returns_gradients_in_the_leaves_dtypes() -> None:
    ours = _leaves(torch.Generator().manual_seed(0), 32, 16, 64)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        out = linear_gelu(*ours)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert [t.grad.dtype for t in ours if t.grad is not None] == [torch.float32] * 3
