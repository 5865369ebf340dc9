"""The profilers a case is re-run under (torch.profiler, nsys, ncu), the child process that re-runs a
test node, and the pure parsers: Top-5 kernels, bottleneck verdict, roofline.

May import nothing of trainperf.
"""
