"""At the exit of every Python process that imported torch._dynamo, one line of torch.compile's cache
counters (FX graph cache and AOTAutograd cache hits, misses and bypasses) and one of its compile times,
on standard error. Put this folder first on PYTHONPATH (PYTHONPATH=research/studies/compile_counters)
to see whether a fresh process (a profiling child) compiles from the caches."""

import atexit
import os
import sys
import time

_started = time.time()


def _report() -> None:
    if "torch._dynamo" not in sys.modules:
        return
    try:
        from torch._dynamo.utils import compile_times, counters

        kept = {
            group: {name: n for name, n in counters[group].items() if "cache" in name or name == "unique_graphs"}
            for group in ("inductor", "aot_autograd", "stats")
        }
        sys.stderr.write(f"[diag pid={os.getpid()} t={time.time() - _started:.1f}s] counters={kept}\n")
        sys.stderr.write("[diag] " + compile_times(repr="str", aggregate=True).replace("\n", " | ")[:1500] + "\n")
    except Exception as error:  # a study's report must not change the process's exit
        sys.stderr.write(f"[diag] failed: {error}\n")


atexit.register(_report)
