"""The Triton cross-entropy kernel against PyTorch's, on fresh random logits; in Triton's interpreter
where there is no GPU (``tests/conftest.py`` sets ``TRITON_INTERPRET=1`` there)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
from custom_kernels.fused_cross_entropy import fused_cross_entropy, linear_cross_entropy

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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("vocab", [1000, 5003], ids=lambda v: f"vocab{v}")
def test_linear_cross_entropy_matches_torch(dtype: torch.dtype, vocab: int) -> None:
    """Loss and gradients of the output layer and the loss as one function; 7 rows run on fewer
    programs than rows, so programs take a second row."""
    generator = torch.Generator().manual_seed(vocab + 1)
    hidden = torch.randn(7, 48, generator=generator).to(DEVICE, dtype)
    weight = (0.3 * torch.randn(vocab, 48, generator=generator)).to(DEVICE, dtype)
    targets = torch.randint(0, vocab, (7,), generator=generator).to(DEVICE)
    ours = [t.detach().clone().requires_grad_() for t in (hidden, weight)]
    theirs = [t.detach().float().clone().requires_grad_() for t in (hidden, weight)]
    loss = linear_cross_entropy(ours[0], ours[1], targets)
    expected = F.cross_entropy(theirs[0] @ theirs[1].t(), targets)
    (3 * loss).backward()
    (3 * expected).backward()
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5 if dtype == torch.float32 else 2e-2)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.grad is not None and reference.grad is not None and mine.grad.dtype == dtype
        tolerance = 1e-5 if dtype == torch.float32 else 2e-2
        torch.testing.assert_close(mine.grad.float(), reference.grad, atol=tolerance, rtol=2e-2)


def test_linear_cross_entropy_under_autocast_and_without_gradients() -> None:
    """Under bf16 autocast the GEMM runs in bf16 as a linear layer's would; without gradients the loss
    is the same and nothing is kept for a backward pass."""
    generator = torch.Generator().manual_seed(3)
    hidden = torch.randn(5, 32, generator=generator).to(DEVICE).requires_grad_()
    weight = (0.3 * torch.randn(700, 32, generator=generator)).to(DEVICE).requires_grad_()
    targets = torch.randint(0, 700, (5,), generator=generator).to(DEVICE)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = linear_cross_entropy(hidden, weight, targets)
        expected = F.cross_entropy(F.linear(hidden, weight).float(), targets)
        with torch.no_grad():
            no_grad_loss = linear_cross_entropy(hidden, weight, targets)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert no_grad_loss.item() == pytest.approx(loss.item(), rel=1e-5) and no_grad_loss.grad_fn is None
    loss.backward()
    assert hidden.grad is not None and hidden.grad.dtype == torch.float32
    assert weight.grad is not None and weight.grad.dtype == torch.float32


def test_gpt2_loss_through_the_fused_output_layer_matches_the_plain_one() -> None:
    """The tiny GPT-2 (its output layer tied to the token embedding): same loss and same gradients,
    the embedding's included, whether the output layer and the loss are one function or not."""
    from workloads.gpt2 import CONFIGS, GPT, linear_next_token_loss, next_token_loss
    from workloads.transformer import TrunkConfig

    config = CONFIGS["tiny"]
    trunk = TrunkConfig(config.layers, config.heads, config.width, config.context, causal=True, attention="sdpa")
    torch.manual_seed(0)
    model = GPT(config, trunk, config.vocab_size).to(DEVICE)
    tokens = torch.randint(0, config.vocab_size, (2, config.context + 1)).to(DEVICE)
    batch = (tokens[:, :-1], tokens[:, 1:])
    gradients = []
    for loss_fn in (linear_next_token_loss, next_token_loss):
        model.zero_grad()
        loss = loss_fn(model, batch)
        loss.backward()
        gradients.append((loss.item(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (fused_loss, fused_grads), (plain_loss, plain_grads) = gradients
    assert fused_loss == pytest.approx(plain_loss, rel=1e-5)
    assert len(fused_grads) == len(plain_grads) == len(list(model.parameters()))
    for fused, plain in zip(fused_grads, plain_grads, strict=True):
        torch.testing.assert_close(fused, plain, atol=1e-6, rtol=1e-4)
