"""Where does a case's run-to-run noise come from? Fresh processes measure cases under conditions that
each remove one suspected source, in rotation, so that drift of the machine spreads over all of them.

Each process measures its case ``--runs`` times (2 unless told) with the runner the plugin uses
(``run_case``): the spread of the first runs across processes is the noise the gate sees; the gap between
a process's first two runs tells process state from the machine's state over time. Beside each run: the
main thread's CPU time and involuntary context switches in the timed loop, the cores it ran on, the
machine's steal time, the GPU's busy share, the chip (its UUID) and its memory clock, and the host's
speed just before and after the timed loop, two ways: a fixed tiny eager training step on the CPU, and
the time to issue one op to the device (``host_speed.dispatch_us``). Every run, not only the first,
tells how far the time follows the latter.

    python research/studies/noise_sources.py --case lstm_lm/reference,mlp_mixer/amp_bf16 --rounds 8 --budget-s 420 --out DIR

Writes DIR/noise-runs.csv (a row per run) and prints a table per case and condition;
research/evidence/h200-noise-sources.md (launch-bound cases) and h200-gpu-bound-noise.md hold what it found.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONDITIONS = (
    "default",
    "gc_off",  # the garbage collector disabled in the whole process
    "no_clock_watch",  # the NVML polling thread not started
    "one_thread",  # torch.set_num_threads(1)
    "pinned_core",  # every thread of the process on one core
    "long_run",  # four times the timed iterations
    "pinned_main",  # the main thread alone on one core, from just before the timed loop
    "fastest_core",  # the main thread on the core that ran a probe fastest just before the timed loop
    "hash_seed",  # PYTHONHASHSEED=0: the same string hashes, so the same dict layouts, in every process
    "no_aslr",  # address space layout randomization off for the process (setarch -R)
    "fixed_layout",  # both
)


def apply(condition: str) -> None:
    """Remove the suspected source (before torch is imported where that matters)."""
    if condition == "pinned_core":
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    elif condition == "gc_off":
        gc.disable()
    elif condition == "one_thread":
        import torch

        torch.set_num_threads(1)
    elif condition == "no_clock_watch":
        from trainperf.measure import device

        class Silent:
            def __init__(self, *_: Any) -> None: ...
            def __enter__(self) -> Silent:
                return self

            def __exit__(self, *_: object) -> None: ...
            def summary(self) -> None:
                return None

        device.ClockWatch = Silent  # type: ignore[misc,assignment]


def host_probe_ms(steps: int = 200) -> float:
    """Median ms of a fixed 8-layer tanh MLP step of width 32 on the CPU (Python, dispatch, autograd)."""
    import torch

    weights = [torch.full((32, 32), 0.01, requires_grad=True) for _ in range(8)]
    inputs = torch.linspace(-1.0, 1.0, 128).view(4, 32)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        hidden = inputs
        for weight in weights:
            hidden = torch.tanh(hidden @ weight)
        hidden.sum().backward()
        for weight in weights:
            weight.grad = None
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def python_probe_ms(n: int = 30_000) -> float:
    start = time.perf_counter()
    sum(i * i for i in range(n))
    return (time.perf_counter() - start) * 1000.0


def place_main_thread(condition: str) -> int | None:
    """Pin the calling (main) thread for ``pinned_main`` and ``fastest_core``; the core chosen."""
    cores = sorted(os.sched_getaffinity(0))
    if condition == "pinned_main":
        os.sched_setaffinity(0, {cores[-1]})
        return cores[-1]
    if condition == "fastest_core":
        speeds = {}
        for core in cores:
            os.sched_setaffinity(0, {core})
            speeds[core] = min(python_probe_ms() for _ in range(3))
        best = min(speeds, key=speeds.__getitem__)
        os.sched_setaffinity(0, {best})
        return best
    return None


def steal_jiffies() -> int:
    """Time the hypervisor gave this machine's cores to others (the 8th field of /proc/stat's cpu line)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(fields[8]) if len(fields) > 8 else 0


def current_core() -> int:
    return int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])


def observe_timed_loop(condition: str, observed: dict[str, Any]) -> None:
    """Wrap the runner's timed loop: place the main thread, probe the host, count CPU time and switches."""
    from trainperf.measure import host_speed, runner

    original: Callable[..., Any] = runner.timed  # type: ignore[attr-defined]

    def timed(*args: Any, **kwargs: Any) -> Any:
        chosen = place_main_thread(condition)
        before_host = host_probe_ms()
        cpu, usage, steal, core = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD), steal_jiffies(), 0
        core = current_core()
        result = original(*args, **kwargs)
        after = resource.getrusage(resource.RUSAGE_THREAD)
        observed["dispatch_after_us"] = host_speed.dispatch_us(args[4])
        observed.update(
            thread_cpu_s=time.thread_time() - cpu,
            involuntary_switches=after.ru_nivcsw - usage.ru_nivcsw,
            steal_jiffies=steal_jiffies() - steal,
            core_start=core,
            core_end=current_core(),
            chosen_core=chosen,
            host_probe_ms=(before_host + host_probe_ms()) / 2,
        )
        if chosen is not None:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        return result

    runner.timed = timed  # type: ignore[attr-defined]


def gemm_choices() -> str | None:
    """A short digest of the cuBLAS algorithms the process's timed GEMMs chose (``custom_kernels.gemm_tuning``):
    equal digests, equal choices; None where the case times none."""
    import hashlib

    from custom_kernels import gemm_tuning

    picked = sorted((repr(key), repr(choice)) for key, choice in gemm_tuning.choices().items())
    return hashlib.sha1(repr(picked).encode()).hexdigest()[:8] if picked else None


def child(case: str, condition: str, process: int, device: str, runs: int) -> None:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # as the suite's conftest.py sets it
    apply(condition)
    import torch
    from trainperf import FULL, TINY
    from trainperf.measure import device as devices
    from trainperf.measure.runner import run_case
    from trainperf.spec.case import CaseSpec

    from research.studies.study_cases import find_case

    ladder, optimization = find_case(case)
    size = FULL if device == "cuda" else TINY  # the CPU: a smoke test of this script
    warmup, iters = ladder.workload.iterations(size)
    iters = iters * 4 if condition == "long_run" else iters
    spec = CaseSpec(ladder.workload, optimization, torch.device(device), size, warmup, iters)
    base = {"case": case, "condition": condition, "process": process, "probe_python_ms": python_probe_ms(300_000)}
    base["gpu_uuid"] = devices.fingerprint(spec.device).gpu_uuid
    observed: dict[str, Any] = {}
    observe_timed_loop(condition, observed)
    for run in range(1, runs + 1):
        measured = run_case(spec)
        during, before = measured.clocks.get("during") or {}, measured.clocks.get("before") or {}
        row = {**base, **observed, "run": run, "median_ms": statistics.median(measured.samples_ms), "iters": iters}
        row["min_sm_mhz"] = during.get("min_sm_clock_mhz")
        row["mean_sm_mhz"] = during.get("mean_sm_clock_mhz")
        row["mean_power_w"] = during.get("mean_power_w")
        row["memory_clock_mhz"] = before.get("memory_clock_mhz")
        row["gemm_choices"] = gemm_choices()
        row["gpu_busy_share"] = during.get("gpu_busy_share")
        row["dispatch_before_us"] = during.get("host_dispatch_us")
        row["thread_cpu_ms_per_iter"] = row.pop("thread_cpu_s", 0.0) * 1000 / iters
        print("ROW " + json.dumps(row), flush=True)


def parent(args: argparse.Namespace) -> int:
    import pandas as pd

    rows, started = [], time.monotonic()
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    pairs = [(case, condition) for case in args.case for condition in args.conditions]
    for round_number in range(args.rounds):
        for offset in range(len(pairs)):  # rotated: each pair runs early and late in turn
            if time.monotonic() - started > args.budget_s:
                break
            case, condition = pairs[(round_number + offset) % len(pairs)]
            argv = [sys.executable, __file__, "--child", condition, "--case", case, "--device", args.device]
            argv += ["--process", str(round_number), "--runs", str(args.runs)]
            if condition in ("no_aslr", "fixed_layout"):
                argv = ["setarch", platform.machine(), "-R", *argv]
            seeded = {"PYTHONHASHSEED": "0"} if condition in ("hash_seed", "fixed_layout") else {}
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env | seeded)
            found = [json.loads(line[4:]) for line in done.stdout.splitlines() if line.startswith("ROW ")]
            if not found:
                print(f"{condition}: no measurement (exit {done.returncode}): {done.stderr[-400:]}", file=sys.stderr)
            rows.extend(found)
    frame = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "noise-runs.csv", index=False)
    print(table(frame).to_markdown(floatfmt=".3f"))
    return 0


def table(frame: Any) -> Any:
    """Per case and condition: the spread of the first runs across processes, also read against the host's
    speed; the gap between a process's two runs; what the main thread did; correlations with the time.
    The dispatch columns read every run: its spread with and without the dispatch time divided out; the
    clock columns likewise with the mean SM clock (a case at the power cap runs as fast as its clock);
    ``gemm_choices`` counts the different sets of tuned GEMM algorithms the processes chose."""
    import pandas as pd

    groups = ["case", "condition"]
    dispatch = (frame.dispatch_before_us + frame.dispatch_after_us) / 2
    clock = pd.to_numeric(frame.get("mean_sm_mhz"), errors="coerce")
    frame = frame.assign(
        per_host=frame.median_ms / frame.host_probe_ms,
        dispatch_us=dispatch,
        per_dispatch=frame.median_ms / dispatch,
        mean_sm_mhz=clock,
        cycles=frame.median_ms * clock,
    )
    first = frame[frame.run == 1].set_index([*groups, "process"])
    second = frame[frame.run == 2].set_index([*groups, "process"])
    gap = ((second.median_ms - first.median_ms).abs() / first.median_ms).groupby(groups).median()
    grouped, every = first.groupby(groups), frame.groupby(groups)
    return grouped.median_ms.agg(["count", "mean", "min", "max"]).assign(
        spread=grouped.median_ms.std() / grouped.median_ms.mean(),
        spread_per_host=grouped.per_host.std() / grouped.per_host.mean(),
        within_process_gap=gap,
        cpu_ms_per_iter=grouped.thread_cpu_ms_per_iter.mean(),
        switches=grouped.involuntary_switches.mean(),
        steal=grouped.steal_jiffies.sum(),
        r_host_probe=grouped.apply(lambda g: g.median_ms.corr(g.host_probe_ms)),
        runs=every.median_ms.count(),
        spread_every_run=every.median_ms.std() / every.median_ms.mean(),
        dispatch_us=every.dispatch_us.mean(),
        spread_per_dispatch=every.per_dispatch.std() / every.per_dispatch.mean(),
        r_dispatch=every.apply(lambda g: g.median_ms.corr(g.dispatch_us)),
        r_dispatch_before=every.apply(lambda g: g.median_ms.corr(g.dispatch_before_us)),
        dispatch_slope=every.apply(_log_slope),
        gpu_busy=every.gpu_busy_share.mean(),
        r_cpu_time=grouped.apply(lambda g: g.median_ms.corr(g.thread_cpu_ms_per_iter)),
        sm_mhz=every.mean_sm_mhz.mean(),
        r_sm_clock=every.apply(lambda g: g.median_ms.corr(g.mean_sm_mhz)),
        spread_in_cycles=every.cycles.std() / every.cycles.mean(),
        gemm_choices=grouped.gemm_choices.nunique(),
    )


def _log_slope(group: Any) -> float:
    """How far the time follows the host: the least-squares slope of log(median) on log(dispatch time)."""
    import numpy as np

    return (
        float(np.polyfit(np.log(group.dispatch_us), np.log(group.median_ms), 1)[0]) if len(group) > 1 else float("nan")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--case", type=lambda s: s.split(","), default=["lstm_lm/reference"])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--budget-s", type=float, default=420.0, help="start no process after this many seconds")
    parser.add_argument("--conditions", type=lambda s: s.split(","), default=list(CONDITIONS[:6]))
    parser.add_argument("--out", type=Path, default=Path("noise"))
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--child", choices=CONDITIONS)
    parser.add_argument("--process", type=int, default=0)
    parser.add_argument("--runs", type=int, default=2, help="runs per process (at least 2)")
    args = parser.parse_args()
    unknown = sorted(set(args.conditions) - set(CONDITIONS))
    if unknown:
        parser.error(f"unknown conditions {', '.join(unknown)}; choose from {', '.join(CONDITIONS)}")
    if args.child:
        child(args.case[0], args.child, args.process, args.device, args.runs)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
