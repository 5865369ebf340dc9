"""The MLP with GELU in cuBLASLt's epilogues against PyTorch's: its two custom operators on CUDA where
there is a GPU, and its autograd plumbing (the operators' PyTorch arithmetic) on the CPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models.cublaslt_mlp import gelu_gradient_through_linear, gelu_mlp, linear_gelu_saving_input

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"))]


def plain_mlp(x: torch.Tensor, up: torch.nn.Linear, down: torch.nn.Linear) -> torch.Tensor:
    return down(F.gelu(up(x), approximate="tanh"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
def test_mlp_output_and_gradients_match_pytorch(device: str, autocast: bool) -> None:
    if device == "cuda" and not autocast:
        pytest.skip("on CUDA the epilogues run in 16-bit GEMMs: the bf16 case covers them")
    torch.manual_seed(0)
    up, down = torch.nn.Linear(64, 256).to(device), torch.nn.Linear(256, 64).to(device)
    torch.nn.init.normal_(up.bias, std=0.5)  # a bias whose gradient and effect are not negligible
    x = torch.randn(3, 40, 64, device=device, requires_grad=True)
    grad = torch.randn(3, 40, 64, device=device)
    results = []
    for forward in (lambda: gelu_mlp(x, up.weight, up.bias, down.weight, down.bias), lambda: plain_mlp(x, up, down)):
        for tensor in (x, *up.parameters(), *down.parameters()):
            tensor.grad = None
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            out = forward()
        out.backward(grad)
        results.append([out.float(), *(t.grad for t in (x, up.weight, up.bias, down.weight, down.bias))])
    tolerance = {"atol": 3e-2, "rtol": 3e-2} if autocast else {"atol": 1e-5, "rtol": 1e-4}
    for ours, theirs in zip(*results, strict=True):
        assert ours is not None and theirs is not None and ours.dtype == theirs.dtype
        torch.testing.assert_close(ours.float(), theirs.float(), **tolerance)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the cuBLASLt epilogues run there only")
def test_epilogues_match_pytorch_at_gpt2_size() -> None:
    """The two GEMMs at GPT-2's MLP size in bf16, each result against PyTorch's of the same inputs."""
    torch.manual_seed(0)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    x, weight, bias = torch.randn(4096, 768, **bf16), 0.02 * torch.randn(3072, 768, **bf16), torch.randn(3072, **bf16)
    hidden, pre = linear_gelu_saving_input(x, weight, bias)
    expected_pre = torch.addmm(bias, x, weight.t())
    torch.testing.assert_close(pre, expected_pre, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(hidden, F.gelu(expected_pre, approximate="tanh"), atol=2e-2, rtol=2e-2)
    grad, down = torch.randn(4096, 768, **bf16), 0.02 * torch.randn(768, 3072, **bf16)
    grad_pre, bias_grad = gelu_gradient_through_linear(grad, down, pre)
    expected = torch.ops.aten.gelu_backward((grad @ down).float(), pre.float(), approximate="tanh")
    torch.testing.assert_close(grad_pre.float(), expected, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(bias_grad.float(), expected.sum(0), atol=0.5, rtol=2e-2)
