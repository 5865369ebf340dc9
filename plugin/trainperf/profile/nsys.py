"""Nsight Systems backend: ``nsys profile`` captures only the marked iteration (cudaProfilerStart/Stop),
kernels inside CUDA graphs included; ``nsys export --type sqlite`` gives its kernels and NVTX ranges."""

from __future__ import annotations

from trainperf.profile import launches
from trainperf.profile.backend import Profile, from_capture
from trainperf.profile.job import Job, ProfileError, child_argv, require_child_ran, run_logged
from trainperf.profile.tools import Tool

REPORT = "nsys"  # nsys.nsys-rep and nsys.sqlite in the job's folder


def profile_argv(tool: Tool, job: Job) -> list[str]:
    return [
        str(tool.path), "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--cuda-graph-trace=node",
        "--force-overwrite=true", "--output", str(job.out_dir / REPORT), *child_argv(job),
    ]  # fmt: skip


def export_argv(tool: Tool, job: Job) -> list[str]:
    report = job.out_dir / f"{REPORT}.nsys-rep"
    sqlite = job.out_dir / f"{REPORT}.sqlite"
    return [str(tool.path), "export", "--type=sqlite", "--force-overwrite=true", "--output", str(sqlite), str(report)]


class NsysProfiler:
    name = "nsys"
    reads_trace = False  # its Top-5 is the one nsys captures

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    def profile(self, job: Job) -> Profile:
        run_logged(profile_argv(self.tool, job), job, "nsys.log")
        require_child_ran(job)
        run_logged(export_argv(self.tool, job), job, "nsys-export.log")
        sqlite = job.out_dir / f"{REPORT}.sqlite"
        try:
            capture = launches.read_nsys_sqlite(sqlite)
        except launches.ProfileFormatError as error:
            raise ProfileError(str(error)) from None
        tool = f"nsys {self.tool.version}"
        return from_capture(capture, tool, job, [job.out_dir / f"{REPORT}.nsys-rep", sqlite])
