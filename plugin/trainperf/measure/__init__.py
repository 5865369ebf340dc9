"""Training a case and measuring it: build, apply the optimization, warm up, time the iterations; the
device's and the host's readings, time limits, data-parallel ranks and fresh-process runs.

May import ``spec`` and ``profile`` (the child process).
"""
