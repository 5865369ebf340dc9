"""Is this runner's GPU fit for timing? Checked through NVML before the nightly suite runs.

Prints one line per GPU (name, SM clock against its maximum, temperature, power, memory in use, clock
event reasons, other processes) and exits:
    0  every GPU is free and not throttled
    6  a GPU is busy (another process holds it) or throttled (thermal, power brake, hardware slowdown)
    7  no NVIDIA GPU or driver (with --allow-cpu, the dry run on a CPU: a note and 0)

    python ci/gpu_check.py [--allow-cpu]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from trainperf.judge.checks import UNRELIABLE_THROTTLES
from trainperf.measure.device import THROTTLE_REASONS

UNFIT = {bit: text for bit, text in THROTTLE_REASONS.items() if text in UNRELIABLE_THROTTLES}  # every kernel slows
NOTED = {0x1: "idle"} | {bit: text for bit, text in THROTTLE_REASONS.items() if text not in UNRELIABLE_THROTTLES}
BUSY, NO_GPU = 6, 7


@dataclass(frozen=True)
class GpuState:
    index: int
    name: str
    sm_clock_mhz: int
    sm_clock_max_mhz: int
    temperature_c: int
    power_w: float
    memory_used_mib: float
    reasons: int  # nvmlDeviceGetCurrentClocksEventReasons bits
    processes: tuple[int, ...]  # pids of compute processes on it

    def line(self) -> str:
        events = [text for bit, text in {**NOTED, **UNFIT}.items() if self.reasons & bit] or ["none"]
        return (
            f"GPU {self.index} {self.name}: SM {self.sm_clock_mhz}/{self.sm_clock_max_mhz} MHz, "
            f"{self.temperature_c} C, {self.power_w:.0f} W, {self.memory_used_mib:,.0f} MiB used, "
            f"clock events: {', '.join(events)}, other processes: {list(self.processes) or 'none'}"
        )


def problems(states: list[GpuState]) -> list[str]:
    """Why each unfit GPU is unfit: another process on it, or a throttle that slows every kernel."""
    found = []
    for state in states:
        if state.processes:
            found.append(f"GPU {state.index} is busy: processes {list(state.processes)} use it")
        throttles = [text for bit, text in UNFIT.items() if state.reasons & bit]
        if throttles:
            found.append(f"GPU {state.index} is throttled: {', '.join(throttles)}")
    return found


def read_states(nvml: Any) -> list[GpuState]:
    states = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name = nvml.nvmlDeviceGetName(handle)
        states.append(
            GpuState(
                index=index,
                name=name.decode() if isinstance(name, bytes) else str(name),
                sm_clock_mhz=nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                sm_clock_max_mhz=nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
                temperature_c=nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
                power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                memory_used_mib=nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20,
                reasons=nvml.nvmlDeviceGetCurrentClocksEventReasons(handle),
                processes=tuple(p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)),
            )
        )
    return states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Is this runner's GPU fit for timing?")
    parser.add_argument("--allow-cpu", action="store_true", help="no GPU is not an error (a CPU dry run)")
    args = parser.parse_args(argv)
    try:
        import pynvml

        pynvml.nvmlInit()
        states = read_states(pynvml)
    except Exception as error:
        note = f"gpu-check: no NVIDIA GPU or driver ({type(error).__name__}: {error})"
        print(note + ("; a CPU dry run goes on" if args.allow_cpu else ""), file=sys.stderr)
        return 0 if args.allow_cpu else NO_GPU
    for state in states:
        print("gpu-check: " + state.line())
    found = problems(states)
    for problem in found:
        print(f"gpu-check: {problem}", file=sys.stderr)
    if not states and not args.allow_cpu:
        return NO_GPU
    return BUSY if found else 0


if __name__ == "__main__":
    sys.exit(main())
