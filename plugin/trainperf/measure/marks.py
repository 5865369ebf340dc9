"""The names a measured iteration leaves behind: the range around it in its traces, and the file a
torch.profiler trace of it is written to. The counting pass, the profiling child and the profilers'
parsers find an iteration by them."""

from __future__ import annotations

MARK = "trainperf_iteration"  # the NVTX / record_function range around a counted or profiled iteration
TRACE = "trace.json"  # a torch.profiler trace of the marked iteration (opens in Perfetto)
