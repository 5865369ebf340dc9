"""Suite-wide settings for perf_tests/ (the plugin itself loads through its pytest11 entry point)."""

import os

# Deterministic cuBLAS workspaces keep repeated runs of a case comparable.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
