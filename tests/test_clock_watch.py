"""The NVML poll that runs beside a case's timed iterations, and the state read before and after, with NVML
stood in for."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest
import torch
from trainperf.measure import device as devices


class FakeNvml:
    """Clock event reasons and SM clocks as a GPU would report them, one reading per call."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(self) -> None:
        self.readings = 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        self.readings += 1
        return 0x40 if self.readings == 3 else 0x1  # thermal slowdown once, idle otherwise

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        if clock == self.NVML_CLOCK_MEM:
            return 3201
        return 1200 if self.readings == 3 else 1980

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:
        return 1980

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return 41

    def nvmlDeviceGetUUID(self, handle: Any) -> bytes:
        return b"GPU-486fb5a3-0000-0000-0000-000000000000"  # older pynvml releases return bytes

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> str:
        return "692-2G520-0282-000"

    NVML_GPU_UTILIZATION_SAMPLES = 1
    NVML_ERROR_NOT_FOUND = pynvml.NVML_ERROR_NOT_FOUND
    SAMPLE_PERIOD_US = 5000  # an H200's is 200,000: most reads 1 ms apart find no new sample

    def nvmlDeviceGetSamples(self, handle: Any, kind: int, last_seen_us: int) -> tuple[int, list[Any]]:
        """The samples closed since ``last_seen_us``, up to two seconds back: busy 40% and 80% in turn
        (the GPU waits for the host at times); NVML's "not found" where none has closed since."""
        now_us = int(time.time() * 1e6)
        first = max(last_seen_us + 1, now_us - 2_000_000)
        period = self.SAMPLE_PERIOD_US
        ends = range(-(-first // period) * period, now_us + 1, period)
        if not ends:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return 0, [
            SimpleNamespace(timeStamp=t, sampleValue=SimpleNamespace(uiVal=40 + 40 * (t // period % 2))) for t in ends
        ]

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return 700_000  # mW: at an H200's cap


class FakeNvmlWithoutUtilization(FakeNvml):
    def nvmlDeviceGetSamples(self, handle: Any, kind: int, last_seen_us: int) -> tuple[int, list[Any]]:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetUUID(self, handle: Any) -> bytes:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> str:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")


def stood_in(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    monkeypatch.setattr(devices, "_nvml", lambda: fake)
    monkeypatch.setattr(devices, "_nvml_handle", lambda nvml, device: "handle")
    return fake


def watched(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """What the watch saw over 40 readings of ``fake``, 1 ms apart (or two seconds, should the poll stop)."""
    stood_in(fake, monkeypatch)
    deadline = time.monotonic() + 2.0
    with devices.ClockWatch(torch.device("cuda"), interval_s=0.001) as watch:
        while fake.readings < 40 and time.monotonic() < deadline:
            time.sleep(0.001)
    return watch.summary()


def test_watch_keeps_every_reason_seen_and_the_lowest_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    summary = watched(FakeNvml(), monkeypatch)
    assert summary is not None and summary["samples"] >= 6
    assert summary["throttle"] == ["hardware thermal slowdown"]  # idle is not among the reasons told
    assert summary["min_sm_clock_mhz"] == 1200
    assert summary["gpu_busy_samples"] >= 4  # 40 ms or more of 5-ms samples, read past "not found"
    assert 0.4 <= summary["gpu_busy_share"] <= 0.8  # the mean of the samples inside the window
    assert 1200 < summary["mean_sm_clock_mhz"] < 1980  # one low reading among the usual
    assert summary["mean_power_w"] == 700.0


def test_a_gpu_that_does_not_report_utilization_still_has_its_clocks_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    summary = watched(FakeNvmlWithoutUtilization(), monkeypatch)
    assert summary is not None and summary["samples"] >= 6 and summary["min_sm_clock_mhz"] == 1200
    assert "gpu_busy_share" not in summary and "gpu_busy_samples" not in summary and "mean_power_w" not in summary


def test_watch_reads_nothing_off_the_gpu() -> None:
    with devices.ClockWatch(torch.device("cpu")) as watch:
        pass
    assert watch.summary() is None


def test_the_state_before_and_after_holds_the_memory_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    stood_in(FakeNvml(), monkeypatch)
    state = devices.clock_state(torch.device("cuda"))
    assert state is not None and state["memory_clock_mhz"] == 3201 and state["sm_clock_max_mhz"] == 1980


def test_the_chip_is_named_by_its_uuid_and_board_part_where_nvml_tells_them(monkeypatch: pytest.MonkeyPatch) -> None:
    stood_in(FakeNvml(), monkeypatch)
    assert devices._nvml_text(torch.device("cuda"), "nvmlDeviceGetUUID") == "GPU-486fb5a3-0000-0000-0000-000000000000"
    assert devices._nvml_text(torch.device("cuda"), "nvmlDeviceGetBoardPartNumber") == "692-2G520-0282-000"
    stood_in(FakeNvmlWithoutUtilization(), monkeypatch)
    assert devices._nvml_text(torch.device("cuda"), "nvmlDeviceGetUUID") is None
    assert devices._nvml_text(torch.device("cuda"), "nvmlDeviceGetBoardPartNumber") is None
