"""Which device a case runs on, its fingerprint, its clocks and throttling (pynvml), its slug."""

from __future__ import annotations

import os
import platform
import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from trainperf.measure import gpu_busy

THROTTLE_REASONS = {  # nvmlClocksEventReason* bits worth telling a user about
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


# Dense (no sparsity) bf16 tensor-core peaks from the vendors' data sheets, TFLOP/s, for MFU.
# Matched in order against the lower-cased device name; --perf-peak-tflops overrides.
DENSE_BF16_TFLOPS = (
    ("h100 pcie", 756.0),
    ("h100 nvl", 835.0),
    ("h100", 989.4),
    ("h200", 989.4),
    ("a100", 312.0),
    ("l40s", 362.1),
    ("l4", 121.0),
)


def peak_tflops(name: str) -> float | None:
    """The dense bf16 peak of a known GPU, else None."""
    lowered = name.lower()
    return next((tflops for key, tflops in DENSE_BF16_TFLOPS if key in lowered), None)


@dataclass(frozen=True)
class Fingerprint:
    """What a baseline was measured on."""

    kind: str  # "cuda" or "cpu"
    name: str
    slug: str
    torch: str
    cuda: str | None = None
    driver: str | None = None
    sm_count: int | None = None
    memory_bytes: int | None = None
    cpu_count: int | None = None
    host_cpu: str | None = None  # the GPU machine's CPU: launch-bound cases run at its pace
    gpu_uuid: str | None = None  # which chip: runs of one case differ between chips of one model
    board_part_number: str | None = None  # the board's revision: may tell the kernels' slow machines apart
    cudnn: int | None = None  # cuDNN's version: its kernels are part of the work counted

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_device(requested: str) -> torch.device:
    """'auto' -> cuda when available else cpu; 'cuda' without a GPU raises a clear error."""
    if requested == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if requested == "cuda":
        raise RuntimeError("--perf-device=cuda was asked for, but torch sees no CUDA device")
    return torch.device("cpu")


def use_local_gpu(local_rank: int) -> None:
    """A launched rank's GPU: the LOCAL_RANK-th visible one, where there are GPUs."""
    if not torch.cuda.is_available():
        return
    if local_rank >= torch.cuda.device_count():
        raise RuntimeError(
            f"LOCAL_RANK={local_rank}, but this process sees {torch.cuda.device_count()} GPU(s): start one rank "
            "per GPU (torchrun --nproc-per-node), or give each node its own (CUDA_VISIBLE_DEVICES)"
        )
    torch.cuda.set_device(local_rank)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor()."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def fingerprint(device: torch.device) -> Fingerprint:
    if device.type != "cuda":
        cores = os.cpu_count() or 1
        name = cpu_model()
        return Fingerprint("cpu", name, f"cpu-{slugify(name)}-{cores}c", torch.__version__, cpu_count=cores)
    props = torch.cuda.get_device_properties(device)
    return Fingerprint(
        kind="cuda",
        name=props.name,
        slug=slugify(props.name),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        driver=_nvml_driver(),
        sm_count=props.multi_processor_count,
        memory_bytes=props.total_memory,
        cpu_count=os.cpu_count(),
        host_cpu=cpu_model(),
        gpu_uuid=_nvml_text(device, "nvmlDeviceGetUUID"),
        board_part_number=_nvml_text(device, "nvmlDeviceGetBoardPartNumber"),
        cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
    )


def _nvml() -> Any | None:
    """The initialised pynvml module, or None when NVML cannot be used."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _nvml_driver() -> str | None:
    nvml = _nvml()
    if nvml is None:
        return None
    driver = nvml.nvmlSystemGetDriverVersion()
    return driver.decode() if isinstance(driver, bytes) else str(driver)


def _nvml_text(device: torch.device, query: str) -> str | None:
    """What one of NVML's text queries of the GPU tells (its UUID "GPU-...", its board part number); None
    without NVML or where the GPU does not report it."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        text = getattr(nvml, query)(_nvml_handle(nvml, device))
    except Exception:
        return None
    return text.decode() if isinstance(text, bytes) else str(text)


def _nvml_handle(nvml: Any, device: torch.device) -> Any:
    props = torch.cuda.get_device_properties(device)
    domain, bus, slot = (getattr(props, f"pci_{part}_id") for part in ("domain", "bus", "device"))
    bus_id = f"{domain:08x}:{bus:02x}:{slot:02x}.0"
    try:
        return nvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    except Exception:
        return nvml.nvmlDeviceGetHandleByIndex(device.index or 0)


def clock_state(device: torch.device) -> dict[str, Any] | None:
    """SM clock (MHz), max SM clock, memory clock, temperature, power and active throttle reasons; None
    off-GPU. The memory clock sets the pace of memory-bound kernels as the SM clock sets that of the rest."""
    if device.type != "cuda":
        return None
    nvml = _nvml()
    if nvml is None:
        return {"note": "pynvml unavailable: clocks not read"}
    handle = _nvml_handle(nvml, device)
    reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
    return {
        "sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
        "temperature_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
        "power_w": nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        "throttle": [text for bit, text in THROTTLE_REASONS.items() if reasons & bit],
    }


class ClockWatch:
    """While a case's timed iterations run, a thread reads NVML every ``interval_s``: the clock event
    reasons seen, the lowest and mean SM clock, the mean power draw and NVML's utilization samples, whose
    periods inside the window give the GPU's busy share (``gpu_busy``: below 1 where the GPU waits for
    the host). A case at the GPU's power cap runs as fast as its clock: the mean tells one chip's speed
    from another's. Off-GPU, or without NVML, it reads nothing."""

    def __init__(self, device: torch.device, interval_s: float = 0.05) -> None:
        self.device = device
        self.interval_s = interval_s
        self.reasons = 0
        self.lowest_mhz: int | None = None
        self.samples = 0
        self.clock_mhz_sum = 0
        self.busy_samples: list[gpu_busy.Sample] = []
        self._busy_seen_us = 0  # NVML returns the samples after this time
        self._busy_readable = True
        self.started = self.ended = 0.0
        self.power_mw_sum = 0
        self.power_samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ClockWatch:
        self.started = time.time()  # NVML's samples carry the wall clock's time
        self._busy_seen_us = int((self.started - 2.0) * 1e6)  # one earlier sample gives the spacing
        nvml = _nvml() if self.device.type == "cuda" else None
        if nvml is not None:
            handle = _nvml_handle(nvml, self.device)
            self._thread = threading.Thread(target=self._poll, args=(nvml, handle), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ended = time.time()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _poll(self, nvml: Any, handle: Any) -> None:
        while True:
            try:
                reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
                clock = int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            except Exception:  # a GPU that cannot tell: the readings so far stand
                return
            self.reasons |= reasons
            self.lowest_mhz = clock if self.lowest_mhz is None else min(self.lowest_mhz, clock)
            self.clock_mhz_sum += clock
            self.samples += 1
            self._read_busy(nvml, handle)
            self._read_power(nvml, handle)
            if self._stop.wait(self.interval_s):
                self._read_busy(nvml, handle)  # the samples that closed since, up to the window's end
                return

    def _read_busy(self, nvml: Any, handle: Any) -> None:
        """Add NVML's utilization samples taken since the last read (none closed since: NVML's "not
        found"); a GPU that does not keep them (some MIG slices) adds none."""
        if not self._busy_readable:
            return
        try:
            _, samples = nvml.nvmlDeviceGetSamples(handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, self._busy_seen_us)
        except Exception as error:
            self._busy_readable = getattr(error, "value", None) == nvml.NVML_ERROR_NOT_FOUND
            return
        for sample in samples:
            self._busy_seen_us = max(self._busy_seen_us, int(sample.timeStamp))
            self.busy_samples.append(gpu_busy.Sample(sample.timeStamp / 1e6, float(sample.sampleValue.uiVal)))

    def _read_power(self, nvml: Any, handle: Any) -> None:
        """Add one power reading (mW); a GPU that does not report it adds none."""
        try:
            self.power_mw_sum += int(nvml.nvmlDeviceGetPowerUsage(handle))
        except Exception:
            return
        self.power_samples += 1

    def summary(self) -> dict[str, Any] | None:
        """``throttle`` (reasons seen), ``min_sm_clock_mhz``, ``mean_sm_clock_mhz``, ``samples``,
        ``gpu_busy_samples`` (NVML's utilization samples wholly inside the window) and, where the GPU
        reports them, ``gpu_busy_share`` (their mean; none where the window held no whole sample) and
        ``mean_power_w``; None when nothing was read."""
        if not self.samples:
            return None
        throttle = [text for bit, text in THROTTLE_REASONS.items() if self.reasons & bit]
        found: dict[str, Any] = {
            "throttle": throttle,
            "min_sm_clock_mhz": self.lowest_mhz,
            "mean_sm_clock_mhz": round(self.clock_mhz_sum / self.samples, 1),
            "samples": self.samples,
        }
        if self.busy_samples:
            whole = gpu_busy.inside(self.busy_samples, self.started, self.ended)
            found["gpu_busy_samples"] = len(whole)
            share = gpu_busy.mean_share(whole)
            if share is not None:
                found["gpu_busy_share"] = share
        if self.power_samples:
            found["mean_power_w"] = round(self.power_mw_sum / self.power_samples / 1000.0, 1)
        return found
