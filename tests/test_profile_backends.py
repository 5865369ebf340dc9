"""Profiler backends without a GPU: tool lookup, the commands they run, and joining ncu's roofline to the
Top-5, on outputs captured on the H100 (tests/data)."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from trainperf.child.process import ChildError, run_logged
from trainperf.measure import torch_trace
from trainperf.profile import launches, ncu, nsys, tools
from trainperf.profile.backend import Profile, from_capture
from trainperf.profile.job import Batch, Job
from trainperf.profile.ncu_raw import read_ncu_raw
from trainperf.profile.profiler import choose_backend, profile_cases
from trainperf.profile.roofline import roofline
from trainperf.profile.torchprof import TorchProfiler
from trainperf.spec.case import case_folder

DATA = Path(__file__).parent / "data"
NODE = "perf_tests/test_gpt2.py::test_gpt2[stack] ; rm -rf $HOME"  # brackets, spaces, shell syntax


def executable(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def job(tmp_path: Path, timeout_s: float = 60.0) -> Job:
    return Job(NODE, tmp_path, tmp_path / "out", timeout_s, 0.1, ("--perf-device=cuda",))


def gpt2_jobs(tmp_path: Path, root: Path) -> list[Job]:
    """gpt2/stack and gpt2/reference to profile in one child, each with its test process's trace."""
    jobs = [
        Job(f"perf_tests/test_gpt2.py::test_gpt2[{case}]", tmp_path, case_folder(root, f"gpt2/{case}"), 60.0, 0.1,
            ("--perf-device=cuda",), trace=DATA / f"gpt2_{case}.trace.json.gz")
        for case in ("stack", "reference")
    ]  # fmt: skip
    for one in jobs:
        one.out_dir.mkdir(parents=True)
    return jobs


def test_override_variable_wins_and_a_bad_one_is_named(tmp_path: Path) -> None:
    fake = executable(tmp_path / "my-nsys", f"cat {DATA / 'nsys.version'}")
    found = tools.find("nsys", {"TRAINPERF_NSYS": str(fake), "PATH": ""})
    assert found.path == fake and found.version == "2025.3.1.0"
    with pytest.raises(tools.ToolError, match="TRAINPERF_NCU=/nowhere/ncu is not an executable file"):
        tools.locate("ncu", {"TRAINPERF_NCU": "/nowhere/ncu"})


def test_path_lookup_reads_ncu_version_from_its_real_banner(tmp_path: Path) -> None:
    executable(tmp_path / "ncu", f"cat {DATA / 'ncu.version'}")
    found = tools.find("ncu", {"PATH": str(tmp_path)})
    assert found.path == tmp_path / "ncu" and found.version == "2025.3.1.0"


def test_missing_tool_says_how_to_point_at_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "INSTALL_GLOBS", {"nsys": (), "ncu": ()})
    with pytest.raises(tools.ToolError, match="nsys not found: set TRAINPERF_NSYS to its path or put it on PATH"):
        tools.locate("nsys", {"PATH": ""})


def test_backend_falls_back_with_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "INSTALL_GLOBS", {"nsys": (), "ncu": ()})
    notes: list[str] = []
    backend = choose_backend("ncu", "cuda", {"PATH": ""}, "2.11.0", notes.append)
    assert backend.name == "torch"
    assert notes == [
        "ncu not found: set TRAINPERF_NCU to its path or put it on PATH: no roofline, Top-5 only",
        "nsys not found: set TRAINPERF_NSYS to its path or put it on PATH: torch.profiler finds the Top-5 instead",
    ]


def test_ncu_takes_its_top5_from_the_test_processs_trace_and_starts_a_child_only_without_one(tmp_path: Path) -> None:
    executable(
        tmp_path / "ncu", f'cat {DATA / "ncu.version"}; [ "$1" = --version ] || echo "$@"'
    )  # a fake ncu that runs nothing
    notes: list[str] = []
    backend = choose_backend("ncu", "cuda", {"PATH": str(tmp_path)}, "2.11.0", notes.append)
    assert backend.name == "ncu" and isinstance(backend.timeline, TorchProfiler)
    assert notes == [f"profiler: ncu 2025.3.1.0 ({tmp_path / 'ncu'})"]
    [untraced] = backend.profile(Batch((job(tmp_path),)))  # the torch child, on no such node
    assert isinstance(untraced, ChildError) and "ran no marked iteration" in str(untraced)
    assert (tmp_path / "out" / "torch.log").is_file()
    (tmp_path / "out" / "torch.log").unlink()
    traced = dataclasses.replace(job(tmp_path), trace=DATA / "gpt2_stack.trace.json.gz")
    [found] = TorchProfiler("2.11.0").profile(Batch((traced,)))
    assert isinstance(found, Profile)
    assert found.tool == "torch.profiler 2.11.0 (test process)" and found.files == [traced.trace]
    [faked] = backend.profile(Batch((traced,)))  # ncu's child, here faked: it wrote no report
    assert isinstance(faked, ChildError) and "ncu wrote no report" in str(faked)
    assert not (tmp_path / "out" / "torch.log").exists()  # no torch child: the trace gave the Top-5
    ncu_argv = (tmp_path / "out" / "ncu.log").read_text()
    assert f"--kernel-name {ncu.kernel_filter([found.top])}" in ncu_argv and str(sys.executable) in ncu_argv


def test_child_is_this_python_running_pytest_on_the_node_without_a_shell(tmp_path: Path) -> None:
    argv = Batch((job(tmp_path),)).argv(torch_trace=True)
    assert argv[:4] == [sys.executable, "-m", "pytest", NODE]
    assert argv[-3:] == ["--trainperf-child", str(tmp_path), "--trainperf-child-torch"]  # the cases' folders' root
    assert "--perf-device=cuda" in argv
    assert argv[argv.index("no:unraisableexception") - 1] == "-p"  # its exit collects the garbage five times


def test_nsys_captures_only_the_marked_iteration_and_graph_kernels(tmp_path: Path) -> None:
    tool = tools.Tool("nsys", Path("/x/nsys"), "2025.3.1.0")
    argv = nsys.profile_argv(tool, job(tmp_path))
    assert argv[:2] == ["/x/nsys", "profile"]
    for flag in ("--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--cuda-graph-trace=node"):
        assert flag in argv
    assert argv[argv.index(sys.executable) :][3] == NODE


def test_nsys_reads_its_top5_from_the_stats_reports_of_this_run_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake nsys: ``profile`` leaves the child's mark, ``stats`` writes the H200 capture's reports to
    its --output prefix, or none with NO_REPORTS; a report an earlier run left is not read."""
    prefix = DATA / "h200_digits_amp_bf16"
    fake = executable(
        tmp_path / "nsys",
        'case "$1" in profile) touch "$(dirname "${10}")/child.json";; '  # beside its --output
        f'stats) [ -n "$NO_REPORTS" ] || for r in cuda_kern_exec_trace nvtx_pushpop_trace; do '
        f'cp {prefix}_$r.csv "$8_$r.csv"; done;; esac',
    )
    (tmp_path / "out").mkdir()
    backend = nsys.NsysProfiler(tools.Tool("nsys", fake, "2025.3.1.0"))
    [found] = backend.profile(Batch((job(tmp_path),)))
    assert isinstance(found, Profile)
    assert found.tool == "nsys 2025.3.1.0" and len(found.top) == 5 and found.bottleneck is not None
    assert [f.name for f in found.files] == ["nsys.nsys-rep", *(f"nsys_{r}.csv" for r in launches.STATS_REPORTS)]
    argv = nsys.stats_argv(backend.tool, job(tmp_path))
    assert argv[1:5] == ["stats", "--report", "cuda_kern_exec_trace,nvtx_pushpop_trace", "--format"]
    monkeypatch.setenv("NO_REPORTS", "1")  # the tables the first run left are removed, not read
    [missing] = backend.profile(Batch((job(tmp_path),)))
    assert isinstance(missing, ChildError)
    assert re.search(r"nsys_cuda_kern_exec_trace\.csv: missing: nsys stats wrote no", str(missing))


def torch_profile(trace: str) -> Profile:
    capture = torch_trace.read_torch_trace(DATA / trace)
    return from_capture(capture, "torch.profiler", Job(NODE, DATA, DATA, 1.0), [])


def test_ncu_profiles_only_the_top5_by_function_name_with_clocks_untouched(tmp_path: Path) -> None:
    top = torch_profile("digits_amp_bf16.trace.json.gz").top
    argv = ncu.profile_argv(tools.Tool("ncu", Path("/x/ncu"), "2025.3.1.0"), Batch((job(tmp_path),)), [top])
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[argv.index("--kernel-name-base") + 1] == "function"
    pattern = argv[argv.index("--kernel-name") + 1]
    assert pattern.startswith("regex:(^|::)(batch_norm_backward_kernel|batch_norm_collect_statistics_kernel|")
    assert argv[argv.index("--filter-mode") + 1] == "per-launch-config"
    assert argv[argv.index("--target-processes") + 1] == "application-only"  # not the compile workers
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in metrics and ncu.REGISTERS in metrics


def test_roofline_joins_the_top5_by_function_grid_and_block() -> None:
    found = torch_profile("digits_amp_bf16.trace.json.gz")
    raw = read_ncu_raw(DATA / "digits_amp_bf16.ncu.csv")  # another process, demangled names
    table = ncu.with_roofline(found.top, roofline(ncu.label_launches(raw, found.configs)))
    assert list(table["short"]) == list(found.top["short"])
    profiled = table.dropna(subset=["bound"])
    assert set(profiled["short"]) >= {"batch_norm_collect_statistics_kernel", "nchwToNhwcKernel"}
    assert set(profiled["bound"]) <= {"compute", "memory", "latency"}
    assert profiled["reason"].str.len().min() > 20


def test_launches_of_another_shape_or_an_ambiguous_one_get_no_point() -> None:
    found = torch_profile("digits_amp_bf16.trace.json.gz")
    raw = read_ncu_raw(DATA / "digits_amp_bf16.ncu.csv")
    reshaped = raw.assign(**{"Grid Size": "(1, 1, 1)"})
    assert ncu.label_launches(reshaped, found.configs).empty
    twin = found.configs.assign(name=found.configs["name"] + " twin")
    assert ncu.label_launches(raw, pd.concat([found.configs, twin])).empty
    with pytest.raises(torch_trace.ProfileFormatError, match="without \\['Grid Size'\\]"):
        ncu.label_launches(raw.drop(columns="Grid Size"), found.configs)


def test_failed_tool_is_one_line_naming_its_log(tmp_path: Path) -> None:
    failing = executable(tmp_path / "tool", "echo starting; echo 'fatal: no device' >&2; exit 3")
    with pytest.raises(ChildError, match=r"tool exited with status 3: fatal: no device \(log: .*tool\.log\)"):
        run_logged([str(failing)], tmp_path / "tool.log", tmp_path, 60.0)


def test_ncu_permission_error_says_what_to_change(tmp_path: Path) -> None:
    denied = executable(tmp_path / "ncu", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission'")
    with pytest.raises(ChildError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        run_logged([str(denied)], tmp_path / "ncu.log", tmp_path, 60.0)


def test_case_folder_is_one_safe_name() -> None:
    assert case_folder(Path("/r"), "gpt2/amp bf16") == Path("/r/gpt2-amp-bf16")
    assert os.sep not in case_folder(Path("r"), "a/b/c").name


def test_ncu_roofline_joins_the_torch_top5_on_the_gpt2_stack() -> None:
    found = torch_profile("gpt2_stack.trace.json.gz")  # CUDA graph replays: kernels seen one by one
    raw = read_ncu_raw(DATA / "gpt2_stack.ncu.csv")
    table = ncu.with_roofline(found.top, roofline(ncu.label_launches(raw, found.configs)))
    assert table["bound"].notna().all() and (table["profiled"] >= 1).all()
    gemm = table.iloc[0]
    assert gemm["short"].startswith("nvjet_sm90") and gemm["precision"] == "bf16" and gemm["tensor_cores"]
    assert gemm["bound"] == "compute" and gemm["roof_share"] > 0.9
    attention = table[table["short"].str.contains("sdpa")].iloc[0]
    assert attention["phase"] == "backward" and attention["roof_share"] < 0.5


def test_three_instantiations_of_one_function_get_their_own_points() -> None:
    found = torch_profile("gpt2_reference.trace.json.gz")  # parent trace and ncu page of one H100 run
    raw = read_ncu_raw(DATA / "gpt2_reference.ncu.csv")
    table = ncu.with_roofline(found.top, roofline(ncu.label_launches(raw, found.configs)))
    kernel2 = table[table["short"] == "Kernel2"]
    assert len(kernel2) == 3 and kernel2["name"].nunique() == 3
    assert set(kernel2["bound"]) == {"compute"} and set(kernel2["precision"]) == {"fp32 pipe"}
    assert kernel2["intensity"].round(0).nunique() == 3  # three tiles, three different points


def test_a_kernel_that_launches_like_another_top5_kernel_says_why_it_has_no_point() -> None:
    found = torch_profile("gpt2_amp_bf16.trace.json.gz")
    raw = read_ncu_raw(DATA / "gpt2_amp_bf16.ncu.csv")  # with registers per thread
    alike = ncu.look_alikes(found.configs)
    table = ncu.with_roofline(found.top, roofline(ncu.label_launches(raw, found.configs)), alike)
    mul = table[table["name"].str.contains("MulFunctor")].iloc[0]
    assert mul["name"] in alike and pd.isna(mul["bound"]) and mul["reason"] == ncu.LOOK_ALIKE
    copy = table[table["name"].str.contains("bfloat16_copy_kernel")].iloc[0]
    assert copy["name"] in alike and copy["bound"] == "memory"  # its other shapes were matched
    assert table["bound"].notna().sum() == 4


def test_a_timed_out_profiler_is_stopped_with_every_process_it_started(tmp_path: Path) -> None:
    """A tool that starts a child of its own and hangs: at the timeout the whole group goes, not only the
    tool itself."""
    grandchild = tmp_path / "grandchild.pid"
    tool = executable(tmp_path / "hangs", f"sleep 300 & echo $! > {grandchild}; wait")
    with pytest.raises(ChildError, match="hangs timed out after 1 s"):
        run_logged([str(tool)], tmp_path / "hangs.log", tmp_path, 1.0)
    pid = int(grandchild.read_text())
    for _ in range(50):  # the kill is sent at once; the process may take a moment to go
        if not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text():
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the profiler's own child {pid} outlived its timeout")


def test_a_hanging_version_probe_is_bounded_by_the_profile_timeout(tmp_path: Path) -> None:
    executable(tmp_path / "nsys", "sleep 300")
    started = time.monotonic()
    with pytest.raises(tools.ToolError, match="--version did not answer within 1 s"):
        tools.find("nsys", {"PATH": str(tmp_path)}, timeout_s=1.0)
    assert time.monotonic() - started < 10


def test_a_version_banner_of_other_bytes_than_utf8_still_gives_the_tool(tmp_path: Path) -> None:
    banner = r"NVIDIA (R) Nsight Compute \377\376 Profiler\nVersion 2025.3.1.0 (build 36398880) (public-release)\n"
    executable(tmp_path / "ncu", f"printf '{banner}'")
    assert tools.find("ncu", {"PATH": str(tmp_path)}).version == "2025.3.1.0"


@pytest.mark.parametrize("case", ["h200_gpt2_reference_gemm", "h200_bert_amp_bf16_gemm"])
def test_the_hierarchical_section_with_the_metrics_gives_the_roofline_of_all_three_sections(case: str) -> None:
    """One kernel of one case profiled twice on one H200: with the three sections ncu took 17 passes a
    launch, with the hierarchical one and METRICS 9; each launch's roofline point must not move."""
    every = {p.kernel: p for p in roofline(read_ncu_raw(DATA / f"{case}.sections.ncu.csv"))}
    lean_raw = read_ncu_raw(DATA / f"{case}.hierarchical.ncu.csv")
    assert set(ncu.METRICS) <= set(lean_raw.columns)
    lean = {p.kernel: p for p in roofline(lean_raw)}
    assert lean.keys() == every.keys()
    for kernel, point in lean.items():
        assert point.precision == every[kernel].precision and point.bound == every[kernel].bound
        assert point.roof_share == pytest.approx(every[kernel].roof_share, rel=0.05)
        assert point.l2_bytes > 0 and point.l1_bytes > 0  # the section's own derived metrics
    assert ncu.SECTIONS == ("SpeedOfLight_HierarchicalTensorRooflineChart",)


def test_one_ncu_child_profiles_every_case_and_each_gets_its_own_kernels_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cases of one H100 run (the GPT-2 stack and reference: their traces, their raw pages as one):
    one ncu child for both, filtering on every case's Top-5 names; each case's table as when it was
    profiled alone. A case the child ran no marked iteration of gets that reason, the other its profile.
    The fake ncu leaves the report, and each folder in MARKS the child's mark; its import prints the page."""
    stack, reference = ((DATA / f"gpt2_{case}.ncu.csv").read_text().splitlines() for case in ("stack", "reference"))
    assert stack[0] == reference[0]  # one header: the pages join as one child's
    page = tmp_path / "page.csv"
    page.write_text("\n".join([*stack, *reference[2:]]) + "\n")
    fake = executable(
        tmp_path / "ncu",
        f'case " $* " in *" --import "*) cat {page};; *) echo "$@"; prev=; '
        'for a in "$@"; do [ "$prev" = --export ] && touch "$a.ncu-rep"; prev=$a; done; '
        'for d in $MARKS; do touch "$d/child.json"; done;; esac',
    )
    root = tmp_path / "profiles"
    jobs = gpt2_jobs(tmp_path, root)
    backend = ncu.NcuProfiler(tools.Tool("ncu", fake, "2025.3.1.0"), TorchProfiler("2.11.0"))
    monkeypatch.setenv("MARKS", " ".join(str(one.out_dir) for one in jobs))
    found = profile_cases(backend, jobs)
    [argv] = (root / "ncu.log").read_text().splitlines()  # one child, its log beside the cases' folders
    tops = [torch_profile(f"gpt2_{case}.trace.json.gz").top for case in ("stack", "reference")]
    assert f"--kernel-name {ncu.kernel_filter(tops)} " in argv and "--nvtx" in argv.split()
    assert all(argv.count(one.nodeid) == 1 for one in jobs) and f"--trainperf-child {root}" in argv
    for case, name in zip(found, ("stack", "reference"), strict=True):
        alone = torch_profile(f"gpt2_{name}.trace.json.gz")
        own = ncu.label_launches(read_ncu_raw(DATA / f"gpt2_{name}.ncu.csv"), alone.configs)
        expected = ncu.with_roofline(alone.top, roofline(own), ncu.look_alikes(alone.configs))
        assert case.batch == 2 and case.error is None and case.profile is not None
        assert case.profile.files[-1] == root / "ncu.ncu-rep"
        for column in ("bound", "intensity", "roof_share", "precision"):
            pd.testing.assert_series_equal(case.profile.top[column], expected[column])
    monkeypatch.setenv("MARKS", str(jobs[0].out_dir))  # the reference's test failed in the child
    ran, failed = profile_cases(backend, jobs)
    assert ran.profile is not None and ran.profile.roofline and failed.profile is None
    assert (
        failed.error == f"ncu: the child process ran no marked iteration of {jobs[1].nodeid} (log: {root / 'ncu.log'})"
    )


class ChildThatTimesItsCases:
    """A backend whose child writes each case's mark with the seconds it spent on it."""

    name = "fake"
    reads_trace = False

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds

    def profile(self, batch: Batch) -> list[Profile | ChildError]:
        for one in batch.jobs:
            if one.nodeid in self.seconds:
                (one.out_dir / "child.json").write_text(f'{{"seconds": {self.seconds[one.nodeid]}}}')
        return [ChildError("no capture") for _ in batch.jobs]


def test_each_case_is_charged_its_own_part_of_the_child_and_a_share_of_the_rest(tmp_path: Path) -> None:
    """A costly case shows as costly in a batch, and a mark an earlier child left counts for nothing."""
    jobs = [Job(f"t.py::t[{case}]", tmp_path, tmp_path / case, 60.0) for case in ("stack", "tf32", "stale")]
    for one in jobs:
        one.out_dir.mkdir()
    stale = jobs[2].out_dir / "child.json"
    stale.write_text('{"seconds": 500.0}')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    found = profile_cases(ChildThatTimesItsCases({"t.py::t[stack]": 150.0, "t.py::t[tf32]": 6.0}), jobs)
    stack, tf32, earlier = (case.seconds for case in found)
    assert stack - tf32 == pytest.approx(144.0) and tf32 - earlier == pytest.approx(6.0)
    assert earlier >= 0 and all(case.batch == 3 for case in found)


def test_the_case_whose_replays_ncu_saved_in_host_memory_is_named_from_real_logs(tmp_path: Path) -> None:
    """An H100 child of four GPT-2 cases: ncu said so once, in gpt2/stack's iteration (66 GB of 80); a
    child of eleven smaller cases never did."""
    for name, found in (("h100_gpt2_stack_fp8_one_child", "gpt2-stack"), ("h100_bert_gpt2_one_child", None)):
        log = tmp_path / name / "ncu.log"
        log.parent.mkdir()
        log.write_text((DATA / f"{name}.ncu.log").read_text())
        assert ncu.host_backup_case(log) == found
    assert ncu.host_backup_case(tmp_path / "missing" / "ncu.log") is None


def test_a_case_replayed_from_host_memory_says_so_and_the_others_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note reaches the case whose iteration ncu's message came in, in its profile and run-document
    entry, and its terminal heading."""
    from trainperf.record import profile_summary
    from trainperf.report.terminal import profile_lines

    page = DATA / "gpt2_stack.ncu.csv"
    fake = executable(
        tmp_path / "ncu",
        f'case " $* " in *" --import "*) cat {page};; *) '
        'echo "trainperf: gpt2/stack: warm-up, then one marked iteration"; '
        'echo "==WARNING== Backing up device memory in system memory. Kernel replay might be slow."; '
        'echo ".trainperf: gpt2/reference: warm-up, then one marked iteration"; prev=; '
        'for a in "$@"; do [ "$prev" = --export ] && touch "$a.ncu-rep"; prev=$a; done; '
        'for d in $MARKS; do touch "$d/child.json"; done;; esac',
    )
    root = tmp_path / "profiles"
    jobs = gpt2_jobs(tmp_path, root)
    monkeypatch.setenv("MARKS", " ".join(str(one.out_dir) for one in jobs))
    backend = ncu.NcuProfiler(tools.Tool("ncu", fake, "2025.3.1.0"), TorchProfiler("2.11.0"))
    stack, reference = profile_cases(backend, jobs)
    assert stack.profile is not None and reference.profile is not None
    assert stack.profile.caveat == ncu.SLOW_REPLAY and reference.profile.caveat is None
    assert profile_summary.record(stack)["caveat"] == ncu.SLOW_REPLAY
    assert f"  {ncu.SLOW_REPLAY}" in profile_lines("gpt2/stack", stack)[0].splitlines()
    assert ncu.SLOW_REPLAY not in "\n".join(profile_lines("gpt2/reference", reference))
