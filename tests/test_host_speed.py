"""The host's dispatch time: a real measurement on this machine's CPU (its figure is not asserted)."""

from __future__ import annotations

import torch
from trainperf.measure.host_speed import dispatch_us


def test_the_dispatch_time_of_an_op_is_measured_on_this_host() -> None:
    figure = dispatch_us(torch.device("cpu"))
    assert 0.0 < figure < 1e6  # microseconds per op, whatever this host's speed
