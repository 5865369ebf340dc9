"""JPEG batches decoded and augmented where the model trains: the DataLoader hands over undecoded bytes
and crop boxes (``images.JpegBytes``); on CUDA nvJPEG decodes the whole batch in one call
(``torchvision.io.decode_jpeg(list, device="cuda")``), and one ``grid_sample`` crops, resizes and flips
every image as the CPU path's ``random_resized_crop`` would, before the images are normalized.

What moves off the host: decoding and resizing, the DataLoader workers' work; what the GPU takes on
instead, about 5-6 ms per 128 images on an H200, so it pays where the host's cores cannot feed the GPU
(research/evidence/h200-gpu-decode.md). On a machine without CUDA torchvision decodes on the CPU, so the
path runs the same at the tiny size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import torch
import torch.nn.functional as F

from workloads import images

Decoder = Callable[[list[torch.Tensor], torch.device], torch.Tensor]
REQUIREMENT = "torchvision"


def decode_jpegs(jpegs: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Equal-sized JPEGs (uint8 byte tensors on the host) as one (N, 3, H, W) uint8 batch on ``device``."""
    from torchvision.io import ImageReadMode, decode_jpeg

    return torch.stack(decode_jpeg(jpegs, mode=ImageReadMode.RGB, device=device))


def crop_resize_flip(pixels: torch.Tensor, boxes: torch.Tensor, side: int) -> torch.Tensor:
    """Each image's box (left, top, width, height, flip; in pixels) resized bilinearly to ``side``
    square and mirrored where ``flip`` is 1: one batched affine sampling, float out."""
    height, width = pixels.shape[-2:]
    left, top, w, h, flip = boxes.to(pixels.device, torch.float32, non_blocking=True).unbind(1)
    zero = torch.zeros_like(left)
    x_scale = w / width * (1 - 2 * flip)  # a mirrored box samples its columns right to left
    theta = torch.stack(
        [
            torch.stack([x_scale, zero, (2 * left + w) / width - 1], 1),
            torch.stack([zero, h / height, (2 * top + h) / height - 1], 1),
        ],
        1,
    )
    grid = F.affine_grid(theta, [len(pixels), pixels.shape[1], side, side], align_corners=False)
    return F.grid_sample(pixels.float(), grid, mode="bilinear", padding_mode="border", align_corners=False)


class DecodedBatches:
    """Batches of ``images.collate_jpegs`` as (normalized float images, labels) on ``device``; channels
    last when the case asks for it."""

    def __init__(
        self,
        batches: Iterable[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]],
        device: torch.device,
        side: int,
        channels_last: bool,
        decode: Decoder = decode_jpegs,
    ) -> None:
        self.batches, self.device, self.decode = batches, device, decode
        self.side, self.channels_last = side, channels_last
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for packed, lengths, boxes, labels in self.batches:
            decoded = self._decoded(list(packed.split(lengths.tolist())))
            pixels = images.normalize(crop_resize_flip(decoded, boxes, self.side))
            if self.channels_last:
                pixels = pixels.contiguous(memory_format=torch.channels_last)
            yield pixels, labels.to(self.device, non_blocking=True)

    def _decoded(self, jpegs: list[torch.Tensor]) -> torch.Tensor:
        """Decodes on a stream of its own. nvJPEG writes its outputs on a private stream without waiting
        for the stream they were allocated on (pytorch/vision#9606): allocated on the compute stream, they
        could overwrite memory that queued kernels still read (training diverged on the H200). Nothing is
        queued on this stream when the decoder allocates, and the compute stream's use of the batch keeps
        its memory from the next decode (``record_stream``)."""
        if self.stream is None:
            return self.decode(jpegs, self.device)
        compute = torch.cuda.current_stream(self.device)
        with torch.cuda.stream(self.stream):
            self.stream.synchronize()  # the previous batch's stacking is done before its blocks are reused
            decoded = self.decode(jpegs, self.device)
        compute.wait_stream(self.stream)
        decoded.record_stream(compute)
        return decoded
