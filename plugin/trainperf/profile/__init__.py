"""Profiling: re-run a case in a child process under torch.profiler, nsys or ncu; Top-5 kernels,
bottleneck verdict and roofline of its marked iteration."""
