"""The naive kernels' memory traffic read from ncu pages captured on two H200s, a fast one (lease BA) and
a slow one (lease BC) (``research/studies/kernel_memory_traffic.sh``, research/evidence/h200-gpu-bound-noise.md), ncu's
notes and all."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.studies import kernel_memory_rows

DATA = Path(__file__).parent / "data"
CAPTURED = DATA / "h200_kernel_memory_traffic_ba.csv"
SLOW_MACHINE = DATA / "h200_kernel_memory_traffic_bc.csv"


@pytest.mark.parametrize("captured", [CAPTURED, SLOW_MACHINE], ids=["fast", "slow"])
def test_ncu_notes_are_left_out_and_every_launch_is_a_row(captured: Path) -> None:
    assert captured.read_text(encoding="utf-8").startswith("==")
    raw = kernel_memory_rows.launches(captured)
    assert len(raw) == 6
    assert raw["Kernel Name"].str.startswith(("matmul_naive", "transpose_naive")).all()


def test_each_kernel_has_its_launches_and_figures_in_their_units() -> None:
    table = kernel_memory_rows.table(kernel_memory_rows.launches(CAPTURED))
    assert list(table.index) == ["matmul_naive", "transpose_naive"]
    assert list(table["launches"]) == [3, 3]
    matmul = table.loc["matmul_naive"]
    assert matmul["ms"].startswith("23.3") and matmul["DRAM read GB"].startswith("4.26")
    assert matmul["DRAM MHz"].startswith("3199") and matmul["SM MHz"].startswith("1979")


def test_the_slow_machines_matmul_reads_the_same_bytes_at_the_same_clocks_for_longer() -> None:
    fast, slow = (kernel_memory_rows.table(kernel_memory_rows.launches(path)) for path in (CAPTURED, SLOW_MACHINE))
    assert slow.loc["matmul_naive", "ms"].startswith("23.9") and fast.loc["matmul_naive", "ms"].startswith("23.3")
    for figure in ("DRAM read GB", "DRAM MHz"):
        assert slow.loc["matmul_naive", figure].split()[0] == fast.loc["matmul_naive", figure].split()[0]


def test_an_argument_without_its_lease_is_refused() -> None:
    with pytest.raises(SystemExit, match="usage"):
        kernel_memory_rows.main(["only-a-file.csv"])
