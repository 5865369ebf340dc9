"""Profile parsers, Top-5, roofline and verdicts on outputs captured on the H100 and the H200
(tests/data/capture.sh, tests/data/capture_nsys_stats.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainperf.measure import torch_trace
from trainperf.measure.torch_trace import ProfileFormatError
from trainperf.profile import launches
from trainperf.profile.ncu_raw import read_ncu_raw, unit_scale
from trainperf.profile.roofline import roofline

from tests.nsys_export import read_sqlite

DATA = Path(__file__).parent / "data"


def top5(capture: torch_trace.Capture):
    return launches.top_kernels(launches.kernel_table(launches.iteration_launches(capture)))


def test_nsys_export_gives_the_top5_of_the_marked_iteration_with_phases() -> None:
    capture = read_sqlite(DATA / "digits_amp_bf16.nsys.sqlite")
    marked = launches.iteration_launches(capture)
    assert len(marked) == 119
    assert set(marked["phase"]) == {"forward", "backward", "optimizer"}
    table = launches.kernel_table(marked)
    assert table["share"].sum() == pytest.approx(1.0)
    assert table["total_ns"].is_monotonic_decreasing
    top = launches.top_kernels(table)
    assert len(top) == 5
    assert top.loc[0, "short"] == "batch_norm_backward_kernel"
    assert top.loc[0, "phase"] == "backward" and top.loc[0, "calls"] == 4


@pytest.mark.parametrize("case", ["h200_digits_amp_bf16", "h200_gpt2_cuda_graphs"])
def test_nsys_stats_hold_the_launches_and_ranges_of_the_sqlite_export(case: str) -> None:
    """One H200 report read both ways (tests/data/capture_nsys_stats.sh): the stats reports give every
    kernel with its launching call (a CUDA graph's kernels with the graph's launch), grid, block and
    name, and every NVTX range, as the SQLite export does."""
    stats = launches.read_nsys_stats(DATA / case)
    export = read_sqlite(DATA / f"{case}.nsys.sqlite")
    columns = ["start", "end", "launch", "grid", "block", "name", "short"]
    ours, theirs = (c.launches[columns].sort_values(["start", "name"]).reset_index(drop=True) for c in (stats, export))
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)
    ranges = [c.ranges.sort_values("start").reset_index(drop=True) for c in (stats, export)]
    pd.testing.assert_frame_equal(*ranges, check_dtype=False)
    marked = launches.iteration_launches(stats)
    assert set(marked["phase"]) == {"forward", "backward", "optimizer"}  # batches come ready: no data kernels
    assert len(launches.top_kernels(launches.kernel_table(marked))) == 5


def test_nsys_and_torch_agree_on_the_top5_within_5_percent() -> None:
    nsys = top5(read_sqlite(DATA / "digits_amp_bf16.nsys.sqlite")).set_index("name")
    torch_top = top5(torch_trace.read_torch_trace(DATA / "digits_amp_bf16.trace.json.gz"))
    assert [torch_trace.short_name(n) for n in torch_top["name"]] == [torch_trace.short_name(n) for n in nsys.index]
    for nsys_ns, torch_ns in zip(nsys["total_ns"], torch_top["total_ns"], strict=True):
        assert torch_ns == pytest.approx(nsys_ns, rel=0.05)


def test_compiled_gpt2_stack_is_gpu_bound_and_led_by_gemms() -> None:
    capture = torch_trace.read_torch_trace(DATA / "gpt2_stack.trace.json.gz")
    marked = launches.iteration_launches(capture)
    top = launches.top_kernels(launches.kernel_table(marked))
    assert top.loc[0, "short"].startswith("nvjet_sm90")  # cuBLAS's Hopper GEMMs
    assert any("sdpa" in name and "bprop" in name for name in top["short"])  # attention backward
    verdict = launches.bottleneck(capture, marked)
    assert verdict.verdict == "GPU-bound" and verdict.gpu_busy > 0.9


def test_a_wait_for_data_while_the_gpu_is_busy_is_not_blamed_on_the_loader() -> None:
    """A batch decoded on the device keeps the host waiting while the GPU works: GPU-bound, wait named."""
    capture = torch_trace.read_torch_trace(DATA / "gpt2_stack.trace.json.gz")
    marked = launches.iteration_launches(capture)
    verdict = launches.bottleneck(capture, marked, data_wait=0.8)
    assert verdict.verdict == "GPU-bound"
    assert "waited for data 80%" in verdict.reason and "loader" not in verdict.reason


def test_many_short_kernels_with_gaps_are_launch_bound_and_data_waits_are_io_bound() -> None:
    capture = read_sqlite(DATA / "digits_amp_bf16.nsys.sqlite")
    marked = launches.iteration_launches(capture)
    assert launches.bottleneck(capture, marked).verdict == "CPU/launch-bound"
    assert launches.bottleneck(capture, marked, data_wait=0.6).verdict == "I/O-bound"


def test_busy_share_is_taken_over_the_timed_iteration_when_known() -> None:
    """nsys stretches the marked iteration of digits amp_bf16 (its host work slows, its kernels do not):
    40% busy there, but its kernels fill the iteration the H100 timed for that case."""
    capture = read_sqlite(DATA / "digits_amp_bf16.nsys.sqlite")
    marked = launches.iteration_launches(capture)
    cases = json.loads((DATA / "h100_digits_ncu.run.json").read_text())["benchmarks"]
    timed_ms = next(c for c in cases if c["name"] == "digits/amp_bf16")["extra_info"]["summary_ms"]["median"]
    verdict = launches.bottleneck(capture, marked, timed_ms=timed_ms)
    assert verdict.verdict == "GPU-bound" and verdict.gpu_busy > 0.9
    assert verdict.reason.startswith("GPU busy 98% of the timed iteration")
    assert launches.bottleneck(capture, marked, timed_ms=3 * timed_ms).verdict == "CPU/launch-bound"


def test_bf16_gemm_is_compute_bound_with_exactly_2mnk_flops() -> None:
    points = {p.kernel: p for p in roofline(read_ncu_raw(DATA / "truth.ncu.csv"))}
    gemm = points["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"]
    assert gemm.flops == 2 * 4096**3
    assert gemm.precision == "bf16" and gemm.tensor_cores
    assert gemm.bound == "compute" and 0.8 < gemm.roof_share <= 1.0
    assert "near the ceiling" in gemm.reason


def test_large_add_is_memory_bound_moving_what_it_must() -> None:
    add = next(p for p in roofline(read_ncu_raw(DATA / "truth.ncu.csv")) if "add" in p.kernel)
    must_move = 3 * 2**25 * 4  # read a and b, write a + b, float32
    assert add.dram_bytes == pytest.approx(must_move, rel=0.05)
    assert add.bound == "memory" and add.intensity < 1
    assert add.reason.startswith("memory-bound at 0.17 FLOP/B")


def test_padded_tiled_transpose_climbs_to_the_dram_roof_that_naive_is_far_from() -> None:
    """The 8192 x 4096 float32 transpose of perf_tests/test_kernels.py under ncu on the H100."""
    (naive,) = roofline(read_ncu_raw(DATA / "transpose_naive.ncu.csv"))
    (tiled,) = roofline(read_ncu_raw(DATA / "transpose_smem_tiled_padded.ncu.csv"))
    assert (naive.kernel, tiled.kernel) == ("transpose_naive", "transpose_tiled")
    assert naive.flops == tiled.flops == 0 and naive.precision == tiled.precision == "none"
    must_move = 2 * 8192 * 4096 * 4  # read once, write once
    assert tiled.dram_bytes == pytest.approx(must_move, rel=0.1)
    assert tiled.bound == "memory" and tiled.roof_share >= 0.8
    assert naive.bound == "latency" and naive.roof_share < 0.2
    assert naive.time_s > 4 * tiled.time_s


def test_digits_iteration_roofline_names_fp32_paths_and_latency() -> None:
    points = roofline(read_ncu_raw(DATA / "digits_amp_bf16.ncu.csv"))
    assert sum(p.launches for p in points) == 12
    conv = next(p for p in points if p.kernel.startswith("sm90_xmma_fprop"))
    assert conv.precision == "bf16" and conv.bound == "compute"
    assert {p.bound for p in points} == {"compute", "memory", "latency"}
    assert all(p.peak_bandwidth and 3.0e12 < p.peak_bandwidth < 3.6e12 for p in points)


def test_units_and_short_names() -> None:
    assert unit_scale("us") == 1e-6 and unit_scale("Tbyte/s") == 1e12 and unit_scale("Kbyte/cycle") == 1e3
    assert unit_scale("Ghz") == 1e9 and unit_scale("%") == 1.0
    assert torch_trace.short_name("void at::native::(anonymous namespace)::max_pool_backward_nchw<float>(int)") == (
        "max_pool_backward_nchw"
    )
    assert torch_trace.short_name("nvjet_sm90_tst_256x128") == "nvjet_sm90_tst_256x128"


def test_malformed_outputs_give_errors_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileFormatError, match="missing"):
        read_ncu_raw("ID,Kernel Name\n,\n1,k\n")
    with pytest.raises(ProfileFormatError, match=r"nsys_cuda_kern_exec_trace\.csv: missing: nsys stats wrote no"):
        launches.read_nsys_stats(tmp_path / "nsys")
    (tmp_path / "nsys_cuda_kern_exec_trace.csv").write_text("Start (ns),Name\n1,k\n")
    with pytest.raises(ProfileFormatError, match=r"kern_exec_trace\.csv: not an nsys stats .* no \['Kernel Start"):
        launches.read_nsys_stats(tmp_path / "nsys")
    kernels = (DATA / "h200_digits_amp_bf16_cuda_kern_exec_trace.csv").read_text().splitlines()
    (tmp_path / "nsys_cuda_kern_exec_trace.csv").write_text("\n".join([*kernels[:3], "x" + kernels[3]]))
    (tmp_path / "nsys_nvtx_pushpop_trace.csv").write_text("")
    with pytest.raises(ProfileFormatError, match=r"kern_exec_trace\.csv: a kernel has a launch time that is missing"):
        launches.read_nsys_stats(tmp_path / "nsys")
    (tmp_path / "nsys_cuda_kern_exec_trace.csv").write_text("\n".join(kernels))
    with pytest.raises(ProfileFormatError, match=r"nvtx_pushpop_trace\.csv: not an nsys stats nvtx_pushpop_trace"):
        launches.read_nsys_stats(tmp_path / "nsys")
    trace = tmp_path / "trace.json"
    trace.write_text('{"no": "events"}')
    with pytest.raises(ProfileFormatError, match=r"trace\.json: not a torch\.profiler chrome trace"):
        torch_trace.read_torch_trace(trace)
    trace.write_text('{"traceEvents": []}')
    with pytest.raises(ProfileFormatError, match="no 'trainperf_iteration' range"):
        launches.iteration_launches(torch_trace.read_torch_trace(trace))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_ncu_parser_fuzz_raises_only_its_own_error(text: str) -> None:
    try:
        frame = read_ncu_raw(text)
    except ProfileFormatError:
        return
    assert "gpu__time_duration.sum" in frame.columns
    roofline(frame)
