"""A labelled JPEG corpus cut from the photos that ship with scikit-learn, decoded and augmented on the
CPU in ``Dataset.__getitem__`` the way an ImageNet pipeline is (random resized crop, flip, normalize).

Image k is a square crop of photo ``k % 2`` (``china.jpg`` or ``flower.jpg``) at a seeded position and
scale, with its colour channels put in the order ``k // 2 % 6`` of the six orders, encoded as a JPEG.
Its label (12 classes) is the photo and the channel order: what the network must learn is which scene
it sees and how its colours were permuted, which survives cropping and flipping. Every 5th image is held
out. Sample k of the endless stream always gets the same augmentation, whatever the number of workers.
"""

from __future__ import annotations

import functools
import io
import itertools
import random
from importlib import resources

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

PHOTOS = ("china.jpg", "flower.jpg")
CHANNEL_ORDERS = tuple(itertools.permutations(range(3)))
CLASSES = len(PHOTOS) * len(CHANNEL_ORDERS)
HELD_OUT_EVERY = 5
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


@functools.cache
def photo(name: str) -> Image.Image:
    return Image.open(io.BytesIO(resources.files("sklearn.datasets.images").joinpath(name).read_bytes())).convert("RGB")


def label_of(k: int) -> int:
    return (k % len(PHOTOS)) * len(CHANNEL_ORDERS) + (k // len(PHOTOS)) % len(CHANNEL_ORDERS)


@functools.cache
def corpus(count: int, stored_side: int) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """``count`` JPEGs of ``stored_side`` pixels square and their labels."""
    images, labels = [], []
    for k in range(count):
        rng = random.Random(k)
        source = photo(PHOTOS[k % len(PHOTOS)])
        side = int(min(source.size) * rng.uniform(0.4, 0.95))
        left, top = rng.randrange(source.width - side + 1), rng.randrange(source.height - side + 1)
        box = (left, top, left + side, top + side)
        crop = source.resize((stored_side, stored_side), Image.Resampling.BILINEAR, box)
        order = CHANNEL_ORDERS[(k // len(PHOTOS)) % len(CHANNEL_ORDERS)]
        permuted = Image.fromarray(np.asarray(crop)[:, :, order])
        encoded = io.BytesIO()
        permuted.save(encoded, format="JPEG", quality=90)
        images.append(encoded.getvalue())
        labels.append(label_of(k))
    return tuple(images), tuple(labels)


def split(count: int, stored_side: int) -> tuple[list[bytes], list[int], list[bytes], list[int]]:
    """(train JPEGs, train labels, held-out JPEGs, held-out labels)."""
    images, labels = corpus(count, stored_side)
    held = [k % HELD_OUT_EVERY == 0 for k in range(count)]
    train = [k for k in range(count) if not held[k]]
    test = [k for k in range(count) if held[k]]
    return [images[k] for k in train], [labels[k] for k in train], [images[k] for k in test], [labels[k] for k in test]


def decode(jpeg: bytes) -> Image.Image:
    return Image.open(io.BytesIO(jpeg)).convert("RGB")


def to_uint8_tensor(image: Image.Image) -> torch.Tensor:
    """(3, H, W) uint8."""
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).contiguous()


def normalize(images: torch.Tensor) -> torch.Tensor:
    """uint8 (..., 3, H, W) to normalized float32, on whatever device they are."""
    mean, std = MEAN.to(images.device), STD.to(images.device)
    return (images.float() / 255.0 - mean) / std


def crop_box(width: int, height: int, rng: random.Random) -> tuple[int, int, int, int, bool]:
    """(left, top, width, height, flip): a box of 35-100% of the area with aspect 3/4 to 4/3, flipped
    half the time; drawn alike for the CPU's augmentation and the GPU's (``workloads/gpu_decode.py``)."""
    area = width * height * rng.uniform(0.35, 1.0)
    aspect = rng.uniform(3 / 4, 4 / 3)
    w = min(width, round((area * aspect) ** 0.5))
    h = min(height, round((area / aspect) ** 0.5))
    left, top = rng.randrange(width - w + 1), rng.randrange(height - h + 1)
    return left, top, w, h, rng.random() < 0.5


def random_resized_crop(image: Image.Image, side: int, rng: random.Random) -> Image.Image:
    """The ``crop_box`` of the image resized to ``side``, flipped where drawn."""
    left, top, w, h, flip = crop_box(*image.size, rng)
    out = image.resize((side, side), Image.Resampling.BILINEAR, (left, top, left + w, top + h))
    return out.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else out


class JpegImages(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Item k: JPEG ``k % n`` decoded and augmented with a generator seeded by k; float32 normalized,
    or uint8 (``uint8=True``) for the GPU to convert."""

    def __init__(self, jpegs: list[bytes], labels: list[int], side: int, uint8: bool = False) -> None:
        self.jpegs, self.labels, self.side, self.uint8 = jpegs, torch.tensor(labels), side, uint8

    def __len__(self) -> int:
        return len(self.jpegs)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = k % len(self.jpegs)
        image = to_uint8_tensor(random_resized_crop(decode(self.jpegs[index]), self.side, random.Random(k)))
        return (image if self.uint8 else normalize(image)), self.labels[index]


class JpegBytes(Dataset[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]):
    """Item k: JPEG ``k % n`` undecoded (a uint8 tensor of its bytes), the ``crop_box`` that the CPU
    path would draw for it, and its label: the decoding and augmenting is left to the batch's consumer
    (``workloads/gpu_decode.py``). Every JPEG is ``stored_side`` pixels square."""

    def __init__(self, jpegs: list[bytes], labels: list[int], stored_side: int) -> None:
        self.jpegs, self.labels, self.stored_side = jpegs, torch.tensor(labels), stored_side

    def __len__(self) -> int:
        return len(self.jpegs)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        index = k % len(self.jpegs)
        box = crop_box(self.stored_side, self.stored_side, random.Random(k))
        jpeg = torch.frombuffer(bytearray(self.jpegs[index]), dtype=torch.uint8)
        return jpeg, torch.tensor(box, dtype=torch.float32), self.labels[index]


def collate_jpegs(
    items: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of ``JpegBytes`` items as four tensors: every JPEG's bytes end to end, their lengths,
    the boxes and the labels. One buffer crosses from a worker, not one per image."""
    jpegs, boxes, labels = zip(*items, strict=True)
    lengths = torch.tensor([len(jpeg) for jpeg in jpegs])
    return torch.cat(jpegs), lengths, torch.stack(boxes), torch.stack(labels)


def held_out_tensor(jpegs: list[bytes], side: int) -> torch.Tensor:
    """The held-out images, resized whole to ``side``, normalized: (N, 3, side, side)."""
    resized = [decode(jpeg).resize((side, side), Image.Resampling.BILINEAR) for jpeg in jpegs]
    return normalize(torch.stack([to_uint8_tensor(image) for image in resized]))
