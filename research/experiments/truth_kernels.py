"""Two kernels whose roofline is known, in one marked range, to check a profiler's figures:

* a bf16 4096 x 4096 x 4096 matmul: 2 * 4096**3 FLOPs, compute-bound;
* an fp32 ``a + b`` of 2**25 elements each: reads 2 x 128 MiB and writes 128 MiB, memory-bound.

    python research/experiments/truth_kernels.py   # under nsys or ncu with the capture range from cudaProfilerStart/Stop
"""

from __future__ import annotations

import torch

SIDE = 4096
ELEMENTS = 2**25


def main() -> None:
    a = torch.randn(SIDE, SIDE, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(SIDE, SIDE, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(ELEMENTS, device="cuda")
    y = torch.randn(ELEMENTS, device="cuda")
    for _ in range(3):  # warm-up: cuBLAS heuristics, allocator
        a @ b
        x + y
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    with torch.cuda.nvtx.range("trainperf_iteration"):
        a @ b
        x + y
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
