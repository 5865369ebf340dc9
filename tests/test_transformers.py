"""The GPT-2 and BERT workloads: data, model sizes, FLOPs, and the accuracy gate catching a broken case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from trainperf.spec.workload import merge_options

from workloads import bert, gpt2, text
from workloads.transformer import TrunkConfig, costed_parameters, padded

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def token_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Token ids kept under ``tmp_path``, with no ids of this process's yet."""
    monkeypatch.setattr(text, "cache_root", lambda: tmp_path)
    text.token_ids.cache_clear()
    yield tmp_path / "token_ids"
    text.token_ids.cache_clear()


def test_tokenizing_is_deterministic_and_splits_hold_out_every_20th_window(token_files: Path) -> None:
    ids = text.token_ids(200_000, 512)
    again = text.tokenize(200_000, 512)  # once more
    assert torch.equal(ids, again)
    assert int(ids.max()) <= text.unknown_id(512)
    assert not bool((ids == text.mask_id(512)).any())
    train, held_out = text.split_windows(ids, 65)
    assert len(held_out) == -(-(len(ids) // 65) // text.HELD_OUT_EVERY)
    windows = ids[: (len(ids) // 65) * 65].view(-1, 65)
    assert torch.equal(held_out[1], windows[text.HELD_OUT_EVERY])
    assert torch.equal(train[0], windows[1])


def test_the_token_ids_of_one_process_are_read_by_the_next(token_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = text.token_ids(200_000, 512)
    assert [path.suffix for path in token_files.iterdir()] == [".pt"]
    text.token_ids.cache_clear()  # a new process
    with monkeypatch.context() as patched:
        patched.setattr(text, "corpus", lambda chars: pytest.fail("tokenized again"))
        assert torch.equal(text.token_ids(200_000, 512), ids)
    assert text.kept_file(200_000, 512) != text.kept_file(200_000, 1024) != text.kept_file(100_000, 512)


@pytest.mark.parametrize("damage", ["cut short", "not torch's"])
def test_a_damaged_token_file_is_tokenized_again_and_replaced(token_files: Path, damage: str) -> None:
    ids = text.token_ids(200_000, 512)
    path = text.kept_file(200_000, 512)
    path.write_bytes(path.read_bytes()[:100] if damage == "cut short" else b"garbage")
    text.token_ids.cache_clear()
    assert torch.equal(text.token_ids(200_000, 512), ids)
    assert torch.equal(torch.load(path, weights_only=True), ids)


def test_masking_follows_bert_and_is_seeded_by_the_window() -> None:
    window = torch.arange(100, 100 + 4096) % 1000
    inputs, labels = bert.mask_window(window, seed=7, vocab_size=1024)
    chosen = labels != bert.IGNORED
    assert 0.13 < chosen.float().mean().item() < 0.17
    assert torch.equal(labels[chosen], window[chosen])
    assert torch.equal(inputs[~chosen], window[~chosen])
    masked = (inputs[chosen] == text.mask_id(1024)).float().mean().item()
    assert 0.75 < masked < 0.85
    again = bert.mask_window(window, seed=7, vocab_size=1024)
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)


def test_gpt2_124m_has_gpt2s_size_and_flops() -> None:
    config = gpt2.CONFIGS["full"]
    trunk = TrunkConfig(config.layers, config.heads, config.width, config.context, causal=True)
    with torch.device("meta"):
        model = gpt2.GPT(config, trunk, padded(config.vocab_size, 64))
    assert model.embed.num_embeddings == 50304
    parameters = costed_parameters(model, config.vocab_size)
    assert parameters == 123_653_376  # 124,439,808 of GPT-2 less its 786,432 position weights
    per_token = 6 * parameters + 12 * 12 * 768 * 1024
    training_flops = per_token * config.batch_size * config.context
    assert training_flops == pytest.approx(7.03e12, rel=0.01)


def test_unknown_workload_option_is_named() -> None:
    with pytest.raises(ValueError, match=r"typo_case: unknown workload options \['atention'\]"):
        merge_options(gpt2.OPTIONS, {"atention": "sdpa"}, "typo_case")


def test_accuracy_gate_catches_fp16_weights_without_loss_scaling(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(
        test_broken="""
import pytest
from trainperf import REFERENCE, Optimization
from workloads.gpt2 import GPT2

CASES = [
    Optimization(REFERENCE),
    Optimization("fp16_weights_no_scaling", options={"param_dtype": "float16"}),
]

@pytest.mark.trainperf(warmup=1, iters=4)
@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_gpt2(trainperf, optimization):
    trainperf.run(GPT2(), optimization)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*gpt2/fp16_weights_no_scaling: training loss became nan at iteration 1 (diverged)*"])


def test_separate_qkv_projections_compute_what_the_packed_one_does() -> None:
    from workloads.transformer import SelfAttention

    packed_config = TrunkConfig(2, 2, 16, 8, causal=True, attention="sdpa")
    separate_config = TrunkConfig(2, 2, 16, 8, causal=True, attention="sdpa", separate_qkv=True)
    torch.manual_seed(0)
    packed, separate = SelfAttention(packed_config), SelfAttention(separate_config)
    with torch.no_grad():
        for projection, weight, bias in zip(
            (separate.q, separate.k, separate.v), packed.qkv.weight.chunk(3), packed.qkv.bias.chunk(3), strict=True
        ):
            projection.weight.copy_(weight)
            projection.bias.copy_(bias)
        separate.out.load_state_dict(packed.out.state_dict())
    x = torch.randn(3, 8, 16)
    torch.testing.assert_close(separate(x), packed(x))
    assert sum(p.numel() for p in separate.parameters()) == sum(p.numel() for p in packed.parameters())
