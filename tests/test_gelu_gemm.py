"""The MLP whose backward GEMM applies GELU's derivative (Triton) against PyTorch's MLP; in Triton's
interpreter where there is no GPU (``tests/conftest.py`` sets ``TRITON_INTERPRET=1`` there)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
from models.gelu_gemm import gelu_backward_through_linear, gelu_mlp

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
def test_mlp_output_and_gradients_match_pytorch(autocast: bool) -> None:
    """100 rows: a partial tile of rows; 96 wide, 384 hidden: partial tiles of columns."""
    torch.manual_seed(0)
    up, down = torch.nn.Linear(96, 384).to(DEVICE), torch.nn.Linear(384, 96).to(DEVICE)
    torch.nn.init.normal_(up.bias, std=0.5)  # a bias whose gradient and effect are not negligible
    x = torch.randn(4, 25, 96, device=DEVICE, requires_grad=True)
    grad = torch.randn(4, 25, 96).to(DEVICE)
    parameters = [x, up.weight, up.bias, down.weight, down.bias]
    results = []
    for forward in (lambda: gelu_mlp(*parameters), lambda: down(F.gelu(up(x), approximate="tanh"))):
        for tensor in parameters:
            tensor.grad = None
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=autocast):
            out = forward()
        out.backward(grad)
        results.append([out.float(), *(t.grad for t in parameters)])
    for ours, theirs in zip(*results, strict=True):
        assert ours is not None and theirs is not None and ours.dtype == theirs.dtype
        scale = theirs.abs().max().item()
        tolerance = {"atol": 2e-2 * scale, "rtol": 3e-2} if autocast else {"atol": 1e-5 * scale, "rtol": 1e-4}
        torch.testing.assert_close(ours.float(), theirs.float(), **tolerance)


def test_small_tiles_cover_every_row_and_column() -> None:
    """Tiles of 32 x 32 x 16 over 70 x 48 by 48 x 80: partial tiles on every side, grouped rows."""
    torch.manual_seed(1)
    grad, weight, pre = torch.randn(70, 48), torch.randn(48, 80), torch.randn(70, 80)
    out, bias_grad = gelu_backward_through_linear(
        grad.to(DEVICE), weight.to(DEVICE), pre.to(DEVICE), tile=(32, 32, 16, 4, 2, 2)
    )
    expected = torch.ops.aten.gelu_backward(grad @ weight, pre, approximate="tanh")
    torch.testing.assert_close(out.cpu(), expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(bias_grad.cpu(), expected.sum(0), atol=1e-3, rtol=1e-4)
