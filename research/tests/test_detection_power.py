"""research/studies/detection_power.py: which GPU-busy cases can catch 5% nine times in ten under the present rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainperf.judge import stats

from research.studies import detection_power

H100 = Path(__file__).parents[2] / "baselines" / "nvidia-h100-80gb-hbm3.json"


def entry(run_medians: list[float], busy: float) -> dict:
    samples = [median for median in run_medians for _ in range(4)]  # runs whose iterations agree
    return {"samples_ms": samples, "summary": {"median": run_medians[0]}, "run_medians_ms": run_medians,
            "host": {"gpu_busy_share": busy}}  # fmt: skip


def test_a_slowdown_at_the_threshold_is_caught_a_quarter_of_the_time_both_measurements_past_it() -> None:
    noise = stats.RunNoise(runs=10, center_ms=100.0, spread=0.01, threshold=0.05, iteration_spread=0.0)
    assert stats.caught_share(noise, 0.05) == pytest.approx(0.25)
    assert stats.caught_share(noise, stats.reliably_caught(noise) or 0.0) == pytest.approx(0.9)
    no_noise = stats.run_noise([10.0], floor=0.03, fallback=0.10)
    assert stats.caught_share(no_noise, 0.05) is None


def test_only_cases_whose_gpu_is_busy_are_listed_least_likely_first() -> None:
    cases = {
        "w/steady": entry([10.0, 10.0, 10.0], busy=0.99),
        "w/spread": entry([10.0, 10.2, 10.4], busy=0.97),  # 2% apart: judged far above 5%
        "w/waits": entry([10.0, 11.0, 12.0], busy=0.5),  # judged on its host work, slowed on the host
    }
    frame = detection_power.power_frame(cases, 0.05)
    assert list(frame["case"]) == ["w/spread", "w/steady"]
    assert frame["caught"][0] < 0.01 and frame["caught"][1] == pytest.approx(1.0)


def test_the_committed_h100_file_names_its_cases_short_of_the_bar(capsys: pytest.CaptureFixture[str]) -> None:
    assert detection_power.main([str(H100)]) == 0
    out = capsys.readouterr().out.splitlines()
    short = int(out[-1].split()[0])
    assert out[-1].endswith("GPU-busy cases catch 5% less than nine times in ten") and short > 0
    assert out[1].split()[0] in {"resnet/compile", "hf_llama/amp_bf16"}  # judged above 20%: never caught
