"""trainperf.adapters: synthetic data that can be learned, configs shrunk for the CPU, names that key
baselines, and one clear line where a model's package is missing."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
import torch
from trainperf import REFERENCE, TINY, Optimization
from trainperf.adapters import Size, from_timm, from_transformers
from trainperf.adapters.size import workload_name
from trainperf.adapters.synthetic import MarkovTokens, PatternImages

CPU = torch.device("cpu")


def test_a_size_rejects_what_cannot_train() -> None:
    with pytest.raises(ValueError, match="batch >= 1"):
        Size(batch=0)
    with pytest.raises(ValueError, match="learning rate"):
        Size(batch=8, lr=0.0)


def test_names_key_baselines_with_letters_digits_and_underscores() -> None:
    assert workload_name("timm", "vit_small_patch16_224.augreg_in21k") == "timm_vit_small_patch16_224_augreg_in21k"
    assert workload_name("hf", "Llama") == "hf_llama"


def test_pattern_images_are_learnable_and_held_out_draws_are_new() -> None:
    images = PatternImages(classes=10, side=16, device=CPU)
    train, labels = next(images.batches(256))
    held, held_labels = images.held_out(256)
    assert train.shape == (256, 3, 16, 16) and int(labels.max()) < 10
    assert not torch.equal(train[:8], held[:8])
    # the nearest class pattern already tells held-out images apart far above chance: there is signal to learn
    distances = torch.cdist(held.flatten(1), images.patterns.flatten(1))
    assert float((distances.argmin(1) == held_labels).float().mean()) > 0.9


def test_markov_tokens_follow_their_chain() -> None:
    chain = MarkovTokens(vocab=64, branches=4)
    walks = chain.sequences(count=32, length=50, seed=0)
    follows = (chain.successors[walks[:, :-1]] == walks[:, 1:, None]).any(-1)
    assert bool(follows.all())
    assert chain.best_loss == pytest.approx(math.log(4))
    assert not torch.equal(walks, chain.sequences(count=32, length=50, seed=1))


def test_transformers_config_is_shrunk_for_the_cpu_and_left_alone() -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.LlamaConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, vocab_size=32000)
    workload = from_transformers(config)
    training = workload.build(CPU, TINY, Optimization(REFERENCE))
    assert workload.name == "hf_llama" and config.hidden_size == 768
    assert sum(p.numel() for p in training.model.parameters()) < 200_000
    inputs, targets = next(iter(training.batches))
    assert inputs.shape == (8, 32) and torch.equal(inputs[:, 1:], targets[:, :-1])
    with torch.no_grad():
        untrained = training.evaluate(training.model.eval())
    assert untrained == pytest.approx(math.log(512), rel=0.05)  # no better than a uniform guess


def test_timm_model_takes_the_tiny_side() -> None:
    pytest.importorskip("timm", reason="timm cannot be imported (it needs torchvision)")
    for model in ("resnet18", "vit_tiny_patch16_224"):  # convolutional: any side; a ViT is built for it
        training = from_timm(model).build(CPU, TINY, Optimization(REFERENCE))
        images, _ = next(iter(training.batches))
        assert images.shape == (8, 3, 32, 32)
        assert training.model(images).shape == (8, 10)


def test_a_missing_timm_is_named_with_its_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "timm", None)  # the import fails as where timm is not installed
    with pytest.raises(ModuleNotFoundError, match=r"needs the timm package.*pip install timm"):
        from_timm("resnet50").build(CPU, TINY, Optimization(REFERENCE))


def test_a_missing_transformers_is_named_with_its_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    workload = from_transformers(transformers.GPT2Config())
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ModuleNotFoundError, match=r"needs the transformers package.*pip install transformers"):
        workload.build(CPU, TINY, Optimization(REFERENCE))


@pytest.mark.parametrize(
    ("body", "cause"),
    [
        ('raise RuntimeError("operator torchvision::nms does not exist")', "RuntimeError: operator torchvision::nms"),
        ("import torchvision_not_here", "ModuleNotFoundError: No module named 'torchvision_not_here'"),
    ],
)
def test_a_timm_that_fails_to_import_is_named_with_its_error_not_as_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, body: str, cause: str
) -> None:
    """A timm installed beside a broken or missing torchvision was reported as not installed."""
    pytester.mkpydir("timm").joinpath("__init__.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.delitem(sys.modules, "timm", raising=False)
    with pytest.raises(ImportError, match=f"needs the timm package, which failed to import: {re.escape(cause)}"):
        from_timm("resnet50").build(CPU, TINY, Optimization(REFERENCE))


def test_the_timm_example_skips_in_one_line_where_timm_fails_to_import(pytester: pytest.Pytester) -> None:
    """pytest.importorskip caught ImportError only: a RuntimeError at timm's import stopped the collection."""
    pytester.mkpydir("timm").joinpath("__init__.py").write_text('raise RuntimeError("operator torchvision::nms")\n')
    example = Path(__file__).resolve().parents[1] / "examples" / "test_timm_resnet.py"
    result = pytester.runpytest_subprocess(
        str(example), "-rs", "-p", "no:cacheprovider", f"--rootdir={example.parents[1]}"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*timm cannot be imported (RuntimeError: operator torchvision::nms): example skipped*"]
    )
