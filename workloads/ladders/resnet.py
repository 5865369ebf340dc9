"""The vision ladder: a ResNet-50-style network fed by a real JPEG pipeline (decode, random resized
crop, flip, normalize on the CPU); each step keeps the previous ones and adds one optimization."""

from __future__ import annotations

from trainperf import REFERENCE, Ladder, Optimization, usable_cores

from workloads import gpu_decode
from workloads.resnet import Vision

WORKERS = max(1, min(12, usable_cores() - 2))  # leave the main process and the GPU feeder a core

# fp32, NCHW, decoding in the main process, pageable copies: bound by the host CPU
reference = Optimization(REFERENCE)
dataloader_workers = reference.but("dataloader_workers", num_workers=WORKERS)
pinned_nonblocking = dataloader_workers.but("pinned_nonblocking", pin_memory=True, non_blocking=True)
gpu_prefetch = pinned_nonblocking.but(
    "gpu_prefetch", prefetch=True, needs_cuda="the next batch is copied on a side CUDA stream"
)
uint8_transfer = gpu_prefetch.but("uint8_transfer", options={"uint8_transfer": True}, needs_cuda=None)
channels_last = uint8_transfer.but("channels_last", channels_last=True)
amp_bf16 = channels_last.but("amp_bf16", amp_dtype="bfloat16")
cudnn_benchmark = amp_bf16.but("cudnn_benchmark", cudnn_benchmark=True)
batch_x2 = cudnn_benchmark.but("batch_x2", options={**cudnn_benchmark.options, "batch_scale": 2})
compiled = batch_x2.but("compile", compile=True)  # Inductor fuses batch norm, add and ReLU
stack = compiled.but(
    "stack",
    compile_mode="reduce-overhead",
    needs_cuda="CUDA graphs are recorded on CUDA only",
    min_speedup={"cuda": 5.0},
)

# the JPEGs decoded and augmented on the device (nvJPEG, one grid_sample) instead of by the DataLoader's
# workers: alone on the eager mixed-precision case, and in the stack. Minimum speedups about two thirds
# of the lowest measured (7.2x and 11.5x on H200 leases: research/evidence/h200-gpu-decode.md); on hosts
# with cores enough for the workers both are slower than their CPU-decoding parents.
GPU_DECODE = {"needs_package": gpu_decode.REQUIREMENT}
decoded_amp_bf16 = amp_bf16.but(
    "gpu_decode", options={**amp_bf16.options, "gpu_decode": True}, min_speedup={"cuda": 5.0}, **GPU_DECODE
)
stack_gpu_decode = stack.but(
    "stack_gpu_decode", options={**stack.options, "gpu_decode": True}, min_speedup={"cuda": 8.0}, **GPU_DECODE
)

LADDER = Ladder(
    Vision(),
    [
        reference,
        dataloader_workers,
        pinned_nonblocking,
        gpu_prefetch,
        uint8_transfer,
        channels_last,
        amp_bf16,
        cudnn_benchmark,
        batch_x2,
        compiled,
        stack,
        decoded_amp_bf16,
        stack_gpu_decode,
    ],
)
