"""Suite-wide settings for perf_tests/ (the plugin itself loads through its pytest11 entry point)."""

import os

import torch._functorch.config

# Deterministic cuBLAS workspaces keep repeated runs of a case comparable.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
# The suite's custom layers (custom_kernels/) are autograd Functions, whose forward and backward Dynamo
# traces whole into the graph; the AOTAutograd cache keeps such graphs only when asked, and without it every
# fresh process (a profiling child, a fresh-process measurement, the next night) compiles these cases again
# from Dynamo's graph on. torchao's FP8 layers stay uncached: Dynamo calls them opaquely (allow_in_graph),
# and the cache cannot tell which code such a call runs.
torch._functorch.config.autograd_cache_allow_custom_autograd_functions = True
