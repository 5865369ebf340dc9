"""ResNet's device-side JPEG path: bytes and crop boxes through the DataLoader, then one batched crop,
resize and flip that matches the CPU pipeline's augmentation of the same sample."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from trainperf import Optimization
from trainperf.spec.workload import TINY

from workloads import gpu_decode, images
from workloads.resnet import CONFIGS, Vision

CPU = torch.device("cpu")


def pil_decode(jpegs: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """The decoder the device path calls, done with PIL: the rest of the path is tested without torchvision."""
    decoded = [images.to_uint8_tensor(images.decode(bytes(jpeg.numpy()))) for jpeg in jpegs]
    return torch.stack(decoded).to(device)


def test_a_box_is_cropped_and_resized_as_interpolating_the_cropped_pixels() -> None:
    pixels = torch.rand(2, 3, 40, 40) * 255
    boxes = torch.tensor([[4.0, 8.0, 20.0, 24.0, 0.0], [0.0, 0.0, 40.0, 40.0, 0.0]])
    out = gpu_decode.crop_resize_flip(pixels, boxes, 16)
    expected = F.interpolate(pixels[:1, :, 8:32, 4:24], size=(16, 16), mode="bilinear", align_corners=False)
    assert out.shape == (2, 3, 16, 16)
    assert torch.allclose(out[:1], expected, atol=1e-3)
    whole = F.interpolate(pixels[1:], size=(16, 16), mode="bilinear", align_corners=False)
    assert torch.allclose(out[1:], whole, atol=1e-3)


def test_a_flipped_box_is_the_mirror_of_the_same_box() -> None:
    pixels = torch.rand(1, 3, 40, 40) * 255
    box = [6.0, 2.0, 30.0, 26.0]
    plain = gpu_decode.crop_resize_flip(pixels, torch.tensor([[*box, 0.0]]), 24)
    mirrored = gpu_decode.crop_resize_flip(pixels, torch.tensor([[*box, 1.0]]), 24)
    assert torch.allclose(mirrored, plain.flip(-1), atol=1e-3)


def test_decoded_batches_match_the_cpu_pipelines_augmentation_of_the_same_samples() -> None:
    train, labels, _, _ = images.split(60, 40)
    on_host = images.JpegImages(train, labels, 32)
    undecoded = images.collate_jpegs([images.JpegBytes(train, labels, 40)[k] for k in (3, 50, 61, 7)])
    pixels, batch_labels = next(iter(gpu_decode.DecodedBatches([undecoded], CPU, 32, True, decode=pil_decode)))
    assert pixels.shape == (4, 3, 32, 32) and pixels.dtype == torch.float32
    assert pixels.is_contiguous(memory_format=torch.channels_last)
    expected = torch.stack([on_host[k][0] for k in (3, 50, 61, 7)])
    assert torch.equal(batch_labels, torch.stack([on_host[k][1] for k in (3, 50, 61, 7)]))
    packed, lengths = undecoded[:2]
    assert packed.dtype == torch.uint8 and packed.dim() == 1 and int(lengths.sum()) == len(packed)
    # the same boxes and flips; only the resampling differs (PIL's filter widens when it shrinks)
    for got, want in zip(pixels, expected, strict=True):
        assert torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1] > 0.99


def test_the_gpu_decode_case_trains_through_torchvisions_decoder_at_the_tiny_size() -> None:
    pytest.importorskip("torchvision", reason="torchvision decodes the JPEGs; not installed here")
    training = Vision().build(CPU, TINY, Optimization("gpu_decode", options={"gpu_decode": True}))
    pixels, labels = next(iter(training.batches))
    assert pixels.shape == (CONFIGS[TINY].batch_size, 3, CONFIGS[TINY].side, CONFIGS[TINY].side)
    loss = training.loss(training.model, (pixels, labels))
    assert torch.isfinite(loss)
