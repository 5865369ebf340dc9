"""How long a window does NVML's GPU busy share need? The gate reads the share of time a kernel ran while a
case's iterations were timed (``device.ClockWatch``), and NVML averages it over a sample period of 1/6 s
to 1 s, by product. This study keeps the GPU busy for known windows after idle ones and prints:

- the period: the spacing of NVML's own utilization samples (``nvmlDeviceGetSamples``), with each sample's
  value and time against the windows;
- per window: what ``ClockWatch`` read (the truth is 100%: one spin kernel covers the window), and what
  NVML's GPM (Hopper and newer) reads between two samples taken at its ends.

    PYTHONPATH=$PWD:$PWD/plugin python research/studies/nvml_busy_window.py --out DIR

Writes DIR/nvml-busy-window.json. Needs a CUDA GPU and pynvml.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

WINDOWS_S = (0.005, 0.03, 0.1, 0.3, 0.6, 1.0, 2.0)
IDLE_S = 1.5  # before each window: NVML's samples before it read an idle GPU


def spin(seconds: float, clock_hz: float) -> None:
    """Keep the GPU busy for ``seconds`` with one kernel, and wait for it."""
    import torch

    torch.cuda._sleep(int(seconds * clock_hz))
    torch.cuda.synchronize()


def gpm_busy(nvml: Any, first: Any, second: Any) -> float | str:
    """GPM's share of time the graphics engine was active between two samples, in percent; the error
    where the GPU or driver does not offer it."""
    try:
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 1
        request.sample1, request.sample2 = first, second
        request.metrics[0].metricId = nvml.NVML_GPM_METRIC_GRAPHICS_UTIL
        nvml.nvmlGpmMetricsGet(request)
        return float(request.metrics[0].value)
    except Exception as error:  # not every GPU, driver or container offers GPM
        return f"{type(error).__name__}: {error}"


def gpm_sample(nvml: Any, handle: Any) -> Any:
    """A GPM sample of the GPU now, or the error's text where GPM is not offered."""
    try:
        return nvml.nvmlGpmSampleGet(handle, nvml.nvmlGpmSampleAlloc())
    except Exception as error:  # not every GPU, driver or container offers GPM
        return f"{type(error).__name__}: {error}"


def window(seconds: float, clock_hz: float, nvml: Any, handle: Any) -> dict[str, Any]:
    """One idle stretch, then one busy window, read by ClockWatch and by GPM."""
    import torch
    from trainperf.measure import device as devices

    time.sleep(IDLE_S)
    started = time.time()
    first = gpm_sample(nvml, handle)
    with devices.ClockWatch(torch.device("cuda")) as watch:
        spin_started = time.perf_counter()
        spin(seconds, clock_hz)
        busy_s = time.perf_counter() - spin_started
    second = gpm_sample(nvml, handle)
    ended = time.time()
    summary = watch.summary() or {}
    failed = next((sample for sample in (first, second) if isinstance(sample, str)), None)
    return {
        "window_s": seconds,
        "busy_s": busy_s,
        "started": started,
        "ended": ended,
        "clock_watch_busy": summary.get("gpu_busy_share"),
        "clock_watch_readings": summary.get("samples"),
        "gpm_busy_percent": failed or gpm_busy(nvml, first, second),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("nvml-busy-window"))
    args = parser.parse_args()
    import pynvml as nvml
    import torch
    from trainperf.measure import gpu_busy

    if not torch.cuda.is_available():
        print("nvml_busy_window: no CUDA GPU here, nothing to measure", file=sys.stderr)
        return 1
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    clock_hz = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM) * 1e6  # a spin runs at the top clock
    spin(0.01, clock_hz)  # the context and the spin kernel loaded before any window
    first_us = int(time.time() * 1e6)
    windows = [window(seconds, clock_hz, nvml, handle) for seconds in WINDOWS_S]
    time.sleep(1.0)
    _, samples = nvml.nvmlDeviceGetSamples(handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, first_us)
    series = [{"t": sample.timeStamp / 1e6, "busy_percent": sample.sampleValue.uiVal} for sample in samples]
    found = {
        "gpu": torch.cuda.get_device_name(),
        "sm_clock_mhz": clock_hz / 1e6,
        "sample_period_s": gpu_busy.sample_period([gpu_busy.Sample(s["t"], s["busy_percent"]) for s in series]),
        "windows": windows,
        "samples": series,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "nvml-busy-window.json").write_text(json.dumps(found, indent=1))
    print(f"NVML utilization sample period: {found['sample_period_s']} s over {len(series)} samples")
    for row in windows:
        inside = [s["busy_percent"] for s in series if row["started"] <= s["t"] <= row["ended"] + 1.0]
        print(
            f"window {row['window_s']:.3f} s (spun {row['busy_s']:.3f} s): ClockWatch {row['clock_watch_busy']} "
            f"({row['clock_watch_readings']} readings), GPM {row['gpm_busy_percent']}, "
            f"NVML samples from its start to 1 s after: {inside}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
