"""Profiler backends (torch, nsys, ncu): not yet available in this version."""

NOT_YET = "--profile={tool}: profiling is not yet available in this version of trainperf; cases ran unprofiled"
