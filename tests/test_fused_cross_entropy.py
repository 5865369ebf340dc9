"""The Triton cross-entropy kernel against PyTorch's, on fresh random logits; in Triton's interpreter
where there is no GPU (``tests/conftest.py`` sets ``TRITON_INTERPRET=1`` there)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
from models.fused_cross_entropy import fused_cross_entropy

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("vocab", [1000, 5003], ids=lambda v: f"vocab{v}")  # one block; two, the last partial
def test_loss_and_gradient_match_torch(dtype: torch.dtype, vocab: int) -> None:
    generator = torch.Generator().manual_seed(vocab)
    logits = (4 * torch.randn(6, vocab, generator=generator)).to(DEVICE, dtype)
    targets = torch.randint(0, vocab, (6,), generator=generator).to(DEVICE)
    ours = logits.detach().clone().requires_grad_()
    theirs = logits.detach().float().clone().requires_grad_()
    loss = fused_cross_entropy(ours, targets)
    expected = F.cross_entropy(theirs, targets)
    (3 * loss).backward()
    (3 * expected).backward()
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert ours.grad is not None and theirs.grad is not None and ours.grad.dtype == dtype
    tolerance = 1e-6 if dtype == torch.float32 else 4e-3  # bf16 keeps 8 bits of the gradient
    torch.testing.assert_close(ours.grad.float(), theirs.grad, atol=tolerance, rtol=1e-2)
