"""GEMMs with a timed choice of cuBLAS algorithm against PyTorch's: the choice itself and the operator at
GPT-2's shapes on CUDA where there is a GPU, the autograd plumbing (the operator's PyTorch arithmetic)
on the CPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from custom_kernels import gemm_tuning
from custom_kernels.gemm_tuning import choices, fastest, timings
from custom_kernels.tuned_gemm import TunedLinear, tuned_mm
from tests.test_cublaslt_epilogues import CUDA, DEVICES, assert_all_close, outputs_and_gradients
from workloads.transformer import TrunkConfig


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_tuned_linear_matches_nn_linear(device: str, autocast: bool, bias: bool) -> None:
    if device == "cuda" and not autocast:
        pytest.skip("on CUDA the tuned GEMMs run in 16-bit: the bf16 case covers it")
    torch.manual_seed(0)
    plain = torch.nn.Linear(64, 96, bias=bias).to(device)
    ours = TunedLinear(64, 96, bias=bias).to(device)
    ours.load_state_dict(plain.state_dict())
    x = torch.randn(3, 40, 64, device=device, requires_grad=True)
    expected = outputs_and_gradients(plain, x, list(plain.parameters()), autocast)
    assert_all_close(outputs_and_gradients(ours, x, list(ours.parameters()), autocast), expected, autocast)


@pytest.mark.parametrize("device", DEVICES)
def test_a_transposed_left_operand_and_a_tied_weight_get_their_gradients(device: str) -> None:
    """The output layer's product with a weight read transposed, and a left operand that is a transpose."""
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    weight = torch.randn(96, 64, device=device, dtype=dtype, requires_grad=True)
    a = torch.randn(64, 40, device=device, dtype=dtype).t().requires_grad_()  # a transposed view
    grad = torch.randn(40, 96, device=device, dtype=dtype)
    gradients = []
    for product in (torch.mm, tuned_mm):
        a.grad, weight.grad = None, None
        out = product(a, weight.t())
        out.backward(grad)
        assert a.grad is not None and weight.grad is not None
        gradients.append([out.float(), a.grad.float(), weight.grad.float()])
    assert_all_close(gradients[1], gradients[0], autocast=device == "cuda")


def test_an_unknown_kernel_choice_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"linear must be one of .*'tuned'"):
        TrunkConfig(2, 2, 64, 64, causal=True, linear="tuned+cublaslt_bias_grad")
    with pytest.raises(ValueError, match=r"mlp must be one of .*'cublaslt_epilogues'"):
        TrunkConfig(2, 2, 64, 64, causal=True, mlp="epilogue")


@pytest.fixture
def fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Choices kept in ``tmp_path``; calling it forgets what this process chose, as a new process would."""
    monkeypatch.setattr(gemm_tuning, "choices_file", lambda: tmp_path / "gemm_choices" / "gpu.json")
    monkeypatch.setattr(gemm_tuning, "_choices", {})

    def forget() -> None:
        gemm_tuning._choices.clear()
        gemm_tuning._kept_choices.cache_clear()

    forget()
    yield forget
    forget()


def never_run(way: object) -> None:
    raise AssertionError(f"{way} was timed again")


def test_a_choice_kept_by_one_process_is_taken_by_the_next_without_timing(fresh_process: Callable[[], None]) -> None:
    key = ("mm", 0, torch.bfloat16, (8192, 768), 2304, (False, True), 1, True)
    gemm_tuning._keep(key, 3)
    gemm_tuning._keep(("mm", 0, torch.bfloat16, (8192, 768), 768, (False, True), 1, True), "torch")
    fresh_process()
    assert fastest(key, ["torch", 0, 1, 2, 3], never_run) == 3
    assert choices() == {key: 3} and key not in timings()


def test_an_unreadable_choices_file_is_an_empty_one(fresh_process: Callable[[], None], tmp_path: Path) -> None:
    (tmp_path / "gemm_choices").mkdir()
    (tmp_path / "gemm_choices" / "gpu.json").write_text("{not json", encoding="utf-8")
    assert gemm_tuning._kept_choices() == {}
    gemm_tuning._keep(("mm", 1), "torch")  # and the next choice replaces it
    fresh_process()
    assert gemm_tuning._kept_choices() == {repr(("mm", 1)): "torch"}


@CUDA
def test_the_fastest_candidate_is_chosen_and_kept(fresh_process: Callable[[], None]) -> None:
    """Of a short and a long GPU wait the short one wins, and later calls get it without timing."""
    key = ("test", "sleeps")
    cycles = {"long": 2_000_000, "short": 200_000}
    calls = {"short": 0, "long": 0}

    def sleep(name: str) -> None:
        calls[name] += 1
        torch.cuda._sleep(cycles[name])

    assert fastest(key, ["long", "short"], sleep) == "short"
    assert timings()[key]["short"] < timings()[key]["long"] and choices()[key] == "short"
    counted = dict(calls)
    assert fastest(key, ["long", "short"], sleep) == "short"
    fresh_process()
    assert fastest(key, ["long", "short"], sleep) == "short"
    assert calls == counted


@CUDA
@pytest.mark.parametrize(("inputs", "outputs"), [(768, 2304), (3072, 768), (768, 50304)])
def test_tuned_products_match_pytorch_at_gpt2_size(inputs: int, outputs: int) -> None:
    """A layer's three GEMMs at GPT-2's sizes in bf16 against PyTorch's, and a choice timed for each."""
    torch.manual_seed(0)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    x, weight = torch.randn(8192, inputs, **bf16), torch.randn(outputs, inputs, **bf16) / inputs**0.5
    grad, bias = torch.randn(8192, outputs, **bf16), torch.randn(outputs, **bf16)
    products = [(x, weight.t(), bias), (grad, weight, None), (grad.t(), x, None)]
    for a, b, b_bias in products:
        expected = (a @ b if b_bias is None else torch.addmm(b_bias, a, b)).float()
        ours = tuned_mm(a, b, b_bias).float()
        assert ((ours - expected).norm() / expected.norm()).item() < 1e-2
    timed = [key for key in timings() if key[0] == "mm" and key[3] == (8192, inputs)]
    assert timed, "the forward GEMM's shape was not timed"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_tiny_gpt2_with_tuned_gemms_computes_what_the_plain_one_does(compiled: bool) -> None:
    """Same weights, same loss and gradients: eager, and traced by the compiler (the operator's fake
    implementation and its autograd formula)."""
    from trainperf.spec.workload import TINY

    from workloads.gpt2 import CONFIGS, GPT, next_token_loss

    config = CONFIGS[TINY]
    trunks = [TrunkConfig(2, 2, 64, 64, causal=True, attention="sdpa", linear=linear) for linear in ("torch", "tuned")]
    torch.manual_seed(0)
    plain, tuned = (GPT(config, trunk, config.vocab_size) for trunk in trunks)
    tuned.load_state_dict(plain.state_dict())
    assert isinstance(tuned.head, TunedLinear) and tuned.head.weight is tuned.embed.weight
    tokens = torch.randint(0, config.vocab_size, (2, 33))
    batch = (tokens[:, :-1], tokens[:, 1:])
    results = []
    for model in (plain, tuned):
        loss_of = torch.compile(next_token_loss, backend="aot_eager") if compiled else next_token_loss
        loss = loss_of(model, batch)
        loss.backward()
        results.append([loss.detach(), *(p.grad for p in model.parameters())])
    for mine, reference in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-5, rtol=1e-4)
