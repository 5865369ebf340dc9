"""The profilers a case is re-run under (torch.profiler, nsys, ncu) in a child process (``child``), and
the pure parsers: Top-5 kernels, bottleneck verdict, roofline.

May import ``spec``, ``measure`` and ``child``.
"""
