"""Linear layers with cuBLASLt's epilogues against PyTorch's: the custom operators on CUDA where there
is a GPU, and the autograd plumbing around them (the operators' PyTorch arithmetic) on the CPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from custom_kernels.cublaslt_epilogues import (
    EpilogueLinear,
    gelu_grad_through,
    linear_gelu_saving_input,
    weight_and_bias_grad,
)

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the cuBLASLt epilogues run there only")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def outputs_and_gradients(
    forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, parameters: list[torch.Tensor], autocast: bool
) -> list[torch.Tensor]:
    """``forward(x)`` and the gradients of ``x`` and ``parameters`` for a fixed random output gradient."""
    for tensor in (x, *parameters):
        tensor.grad = None
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=autocast):
        out = forward(x)
    out.backward(torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(x.device))
    gradients = [t.grad for t in (x, *parameters)]
    assert all(g is not None for g in gradients)
    return [out.float(), *(g for g in gradients if g is not None)]


def assert_all_close(ours: list[torch.Tensor], theirs: list[torch.Tensor], autocast: bool) -> None:
    """Close in float32; in bf16 within 2% of each tensor's largest value (sums of rounded terms)."""
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype == reference.dtype
        scale = reference.abs().max().item()
        tolerance = {"atol": 2e-2 * scale, "rtol": 3e-2} if autocast else {"atol": 1e-5 * scale, "rtol": 1e-4}
        torch.testing.assert_close(mine.float(), reference.float(), **tolerance)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
def test_epilogue_linear_matches_nn_linear(device: str, autocast: bool) -> None:
    if device == "cuda" and not autocast:
        pytest.skip("on CUDA the epilogue runs in 16-bit GEMMs: the bf16 case covers it")
    torch.manual_seed(0)
    plain = torch.nn.Linear(64, 96).to(device)
    torch.nn.init.normal_(plain.bias, std=0.5)
    ours = EpilogueLinear(64, 96).to(device)
    ours.load_state_dict(plain.state_dict())
    x = torch.randn(3, 40, 64, device=device, requires_grad=True)
    expected = outputs_and_gradients(plain, x, list(plain.parameters()), autocast)
    assert_all_close(outputs_and_gradients(ours, x, list(ours.parameters()), autocast), expected, autocast)


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
def test_linear_gelu_with_the_epilogue_matches_pytorch(autocast: bool) -> None:
    """Its backward pass is the Triton kernel: on the GPU where there is one, else in the interpreter."""
    pytest.importorskip("triton", reason="Triton is not installed: pip install triton")
    from custom_kernels.fused_gelu import linear_gelu

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not autocast:
        pytest.skip("on CUDA the epilogue runs in 16-bit GEMMs: the bf16 case covers it")
    torch.manual_seed(0)
    up = torch.nn.Linear(64, 256).to(device)
    torch.nn.init.normal_(up.bias, std=0.5)
    x = torch.randn(3, 40, 64, device=device, requires_grad=True)
    parameters = [up.weight, up.bias]
    expected = outputs_and_gradients(lambda t: F.gelu(up(t), approximate="tanh"), x, parameters, autocast)
    ours = outputs_and_gradients(lambda t: linear_gelu(t, up.weight, up.bias, epilogue=True), x, parameters, autocast)
    assert_all_close(ours, expected, autocast)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
@pytest.mark.parametrize("tuned", [False, True], ids=["heuristic", "tuned"])
def test_epilogue_mlp_matches_pytorch(device: str, autocast: bool, tuned: bool) -> None:
    if device == "cuda" and not autocast:
        pytest.skip("on CUDA the epilogues run in 16-bit GEMMs: the bf16 case covers it")
    from custom_kernels.epilogue_mlp import epilogue_mlp

    torch.manual_seed(0)
    up, down = torch.nn.Linear(64, 256).to(device), torch.nn.Linear(256, 64).to(device)
    for bias in (up.bias, down.bias):
        torch.nn.init.normal_(bias, std=0.5)
    x = torch.randn(3, 40, 64, device=device, requires_grad=True)
    parameters = [up.weight, up.bias, down.weight, down.bias]
    expected = outputs_and_gradients(lambda t: down(F.gelu(up(t), approximate="tanh")), x, parameters, autocast)
    ours = outputs_and_gradients(lambda t: epilogue_mlp(t, *parameters, tuned=tuned), x, parameters, autocast)
    assert_all_close(ours, expected, autocast)


@CUDA
def test_epilogues_match_pytorch_at_gpt2_size() -> None:
    """Both GEMMs at GPT-2's sizes in bf16, each result against PyTorch's of the same inputs."""
    torch.manual_seed(0)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    x, weight, bias = torch.randn(4096, 768, **bf16), 0.02 * torch.randn(3072, 768, **bf16), torch.randn(3072, **bf16)
    hidden, pre = linear_gelu_saving_input(x, weight, bias)
    expected_pre = torch.addmm(bias, x, weight.t())
    torch.testing.assert_close(pre, expected_pre, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(hidden, F.gelu(expected_pre, approximate="tanh"), atol=2e-2, rtol=2e-2)
    grad = torch.randn(4096, 2304, **bf16)
    weight_grad, bias_grad = weight_and_bias_grad(grad, x)
    torch.testing.assert_close(weight_grad, grad.t() @ x, atol=0.5, rtol=2e-2)
    torch.testing.assert_close(bias_grad.float(), grad.float().sum(0), atol=0.5, rtol=2e-2)
    down, grad_out = 0.02 * torch.randn(768, 3072, **bf16), torch.randn(4096, 768, **bf16)
    expected_grad = torch.ops.aten.gelu_backward((grad_out @ down).float(), pre.float(), approximate="tanh")
    torch.testing.assert_close(gelu_grad_through(grad_out, down, pre).float(), expected_grad, atol=2e-2, rtol=2e-2)


@CUDA
def test_strided_or_mixed_inputs_are_refused_with_their_shapes() -> None:
    x = torch.randn(64, 48, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(32, 48, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"contiguous tensors of one dtype.*\(32, 48\) torch.bfloat16 strided"):
        linear_gelu_saving_input(x, weight.t().contiguous().t(), torch.zeros(32, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"\(32,\) torch.float32"):
        linear_gelu_saving_input(x, weight, torch.zeros(32, device="cuda"))
