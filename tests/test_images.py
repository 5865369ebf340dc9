"""The vision workload's JPEG pipeline: deterministic, labelled, and the same on either side of the copy."""

from __future__ import annotations

import io

import torch
from PIL import Image
from trainperf.spec.workload import FULL, TINY

from workloads import images
from workloads.resnet import CONFIGS, ResNet, recalibrate_batch_norm


def test_corpus_is_jpegs_with_balanced_labels_and_a_held_out_fifth() -> None:
    train, train_labels, test, _ = images.split(120, 40)
    assert (len(train), len(test)) == (96, 24)
    assert all(Image.open(io.BytesIO(jpeg)).format == "JPEG" for jpeg in train + test)
    assert sorted(set(train_labels)) == list(range(images.CLASSES))
    assert [train_labels.count(c) for c in range(images.CLASSES)] == [8] * images.CLASSES
    assert images.corpus(120, 40) is images.corpus(120, 40)  # built once per process


def test_an_item_is_the_same_whoever_decodes_it_and_augmentation_varies_with_k() -> None:
    train, labels, _, _ = images.split(60, 40)
    first, again = images.JpegImages(train, labels, 32), images.JpegImages(list(train), list(labels), 32)
    assert torch.equal(first[7][0], again[7][0])
    assert not torch.equal(first[7][0], first[7 + len(train)][0])  # the same JPEG, another crop
    assert first[7][1] == first[7 + len(train)][1]


def test_uint8_items_normalized_on_the_device_equal_the_float_items() -> None:
    train, labels, _, _ = images.split(60, 40)
    as_float, as_uint8 = images.JpegImages(train, labels, 32), images.JpegImages(train, labels, 32, uint8=True)
    pixels = as_uint8[3][0]
    assert pixels.dtype == torch.uint8 and pixels.shape == (3, 32, 32)
    assert torch.allclose(images.normalize(pixels), as_float[3][0])


def test_resnet_50_has_resnet_50s_shape() -> None:
    full = ResNet(CONFIGS[FULL].blocks, CONFIGS[FULL].width, 1000)
    assert sum(p.numel() for p in full.parameters()) == 25_557_032  # torchvision's resnet50
    tiny = ResNet(CONFIGS[TINY].blocks, CONFIGS[TINY].width, images.CLASSES)
    assert tiny(torch.zeros(2, 3, 32, 32)).shape == (2, images.CLASSES)


def test_batch_norm_is_recalibrated_for_the_current_weights() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()
    pixels = torch.randn(12, 3, 8, 8) * 2.0 + 1.0
    with torch.no_grad():
        recalibrate_batch_norm(model, pixels, batch_size=4, channels_last=True)
        features = model[0](pixels)
    norm = model[1]
    assert torch.allclose(norm.running_mean, features.mean(dim=(0, 2, 3)), atol=1e-5)  # all 3 chunks, equally
    assert norm.momentum == 0.1 and not model.training  # as they were
