"""Two cases' marked iterations in one process, each between cudaProfilerStart and Stop inside an NVTX
range named after the case, the second at twice the first's rows: does ncu's per-launch-config filter
profile the second case's launches of a shape the first one had, and can its report tell the cases apart?
Run under ncu by ncu_case_ranges.sh."""

import torch


def marked(case: str, rows: int) -> None:
    x = torch.randn(rows, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")
    for _ in range(2):  # warm-up: cuBLAS picks its kernels
        torch.relu(x @ w)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(f"trainperf_case:{case}")
    torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push("trainperf_iteration")
    torch.relu(x @ w)
    torch.relu(x @ w)  # a second launch of each shape in the range
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    torch.cuda.profiler.stop()
    torch.cuda.nvtx.range_pop()


marked("a", 4096)
marked("b", 4096)  # the same shapes: profiled again?
marked("c", 8192)
