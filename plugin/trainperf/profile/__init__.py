"""Profiling: re-run a case in a child process under torch.profiler, nsys or ncu; Top-5 kernels and roofline.

The child side (``replay``) and the parsers are in place; the parent side is not wired to ``--profile`` yet.
"""

NOT_YET = "--profile={tool}: profiling is not yet available in this version of trainperf; cases ran unprofiled"
