"""Does a case's time depend on what ran before it in the process? Each sequence runs in a fresh process
and measures its cases one after another with the plugin's runner (``run_case``), as a pytest session
does; the same case measured first and after another tells the order's effect from the machine's.

    python research/studies/case_order.py --ladder workloads.ladders.resnet --seq amp_bf16,amp_bf16 \
        --seq reference,amp_bf16,amp_bf16 --repeat 2

Prints a row per measured case: its sequence, position, median ms, the main thread's CPU ms per
iteration of the whole run, torch's intra-op threads before it and, on a GPU, its temperature before the
timed iterations and its mean SM clock and power draw during them: a case at the power cap runs slower on
a GPU that the cases before it heated.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any


def child(ladder_module: str, sequence: list[str], device: str) -> None:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # as the suite's conftest.py sets it
    import torch
    from trainperf import FULL, TINY
    from trainperf.measure.runner import run_case
    from trainperf.spec.case import CaseSpec

    ladder = importlib.import_module(ladder_module).LADDER
    size = FULL if device == "cuda" else TINY  # the CPU: a smoke test of this script
    warmup, iters = ladder.workload.iterations(size)
    for position, name in enumerate(sequence):
        optimization = next(o for o in ladder.cases if o.name == name)
        spec = CaseSpec(ladder.workload, optimization, torch.device(device), size, warmup, iters)
        threads, cpu = torch.get_num_threads(), time.thread_time()
        measured = run_case(spec)
        row = {
            "sequence": ">".join(sequence),
            "position": position,
            "case": name,
            "median_ms": round(statistics.median(measured.samples_ms), 3),
            "main_cpu_ms_per_iter": round((time.thread_time() - cpu) * 1000 / (warmup + iters), 3),
            "threads_before": threads,
            **gpu_readings(measured.clocks),
        }
        print("ROW " + json.dumps(row), flush=True)


def gpu_readings(clocks: dict[str, Any]) -> dict[str, Any]:
    """The GPU's temperature before the timed iterations, its mean SM clock and power draw while they
    ran; blanks off-GPU or without NVML."""
    before, during = clocks.get("before") or {}, clocks.get("during") or {}
    return {
        "temperature_before_c": before.get("temperature_c"),
        "mean_sm_mhz": during.get("mean_sm_clock_mhz"),
        "mean_power_w": during.get("mean_power_w"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladder", required=True, help="module with LADDER, e.g. workloads.ladders.resnet")
    parser.add_argument("--seq", action="append", required=True, help="comma-separated cases, one process")
    parser.add_argument("--repeat", type=int, default=1, help="times to run every sequence, in rotation")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one sequence, in this process
        child(args.ladder, args.seq[0].split(","), args.device)
        return 0
    for _ in range(args.repeat):
        for sequence in args.seq:
            command = [sys.executable, __file__, "--ladder", args.ladder, "--device", args.device]
            done = subprocess.run([*command, "--seq", sequence, "--child"], capture_output=True, text=True)
            rows = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
            print("\n".join(rows) or f"{sequence}: exit {done.returncode}: {done.stderr[-400:]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
