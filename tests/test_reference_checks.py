"""The checks of a case's declarations over its reference: speedup (with its measured noise) and memory."""

import pytest
from trainperf.judge import checks, reference_checks

BASE = [10.0 + 0.02 * (i % 5) for i in range(30)]
STABLE = checks.Baseline(BASE, [10.04, 10.03, 10.05])  # three runs whose medians agree within 0.1%
NOISY = checks.Baseline(BASE, [10.0, 10.6, 9.5, 10.3, 9.8])  # a host-bound case: runs move by about 4%


def test_speedup_check() -> None:
    assert reference_checks.speedup_check("w/c", 1.5, None).passed is None
    assert reference_checks.speedup_check("w/c", 1.5, 1.2).passed is True
    below = reference_checks.speedup_check("w/c", 1.1, 1.2)
    assert below.passed is False and "1.10x" in below.message and "1.20x" in below.message


def test_a_speedup_short_within_the_measured_noise_passes() -> None:
    """A launch-bound case's speedup moves with the host as much as its time: a shortfall the measured
    noise of the case and its reference explains is not judged, one beyond it fails; without baselines the
    declared minimum is strict."""
    stable = STABLE.noise().threshold
    assert reference_checks.speedup_noise(STABLE, STABLE) == pytest.approx((1 + stable) ** 2 - 1)
    assert reference_checks.speedup_noise(STABLE, None) is None and reference_checks.speedup_noise(None, STABLE) is None
    noise = reference_checks.speedup_noise(NOISY, STABLE)
    assert noise is not None and noise > 2 * stable
    within = reference_checks.speedup_check("w/c", 3.96, 4.0, noise)
    assert within.passed is None and within.noted and within.message.startswith("w/c: not judged: speedup 3.96x")
    assert "by 1.0%, within" in within.message
    beyond = reference_checks.speedup_check("w/c", 2.0, 4.0, noise)
    assert beyond.passed is False and "by 100.0%, beyond" in beyond.message
    assert reference_checks.speedup_check("w/c", 3.96, 4.0).passed is False


def test_memory_check() -> None:
    assert reference_checks.memory_check("w/c", 60, 100, 0.7).passed is True
    assert reference_checks.memory_check("w/c", 80, 100, 0.7).passed is False
    assert reference_checks.memory_check("w/c", None, 100, 0.7).passed is None
