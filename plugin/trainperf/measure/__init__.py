"""Training a case and measuring it: build, apply the optimization, warm up, time the iterations; the
device's and the host's readings, time limits, data-parallel ranks, the work counted per iteration and
the torch.profiler traces it is counted from.

May import ``spec``.
"""
