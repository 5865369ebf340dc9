"""Nsight Systems backend: ``nsys profile`` captures only the marked iteration (cudaProfilerStart/Stop),
kernels inside CUDA graphs included; ``nsys stats`` reports its kernels, each with the host call that
launched it, and its NVTX ranges as CSV, a supported output."""

from __future__ import annotations

from trainperf.child.process import ChildError
from trainperf.measure import torch_trace
from trainperf.profile import launches
from trainperf.profile.backend import Profile, from_capture
from trainperf.profile.job import Batch, Job, require_child_ran
from trainperf.profile.tools import Tool

REPORT = "nsys"  # nsys.nsys-rep, its nsys.sqlite and the nsys_<report>.csv files in the job's folder


def profile_argv(tool: Tool, job: Job) -> list[str]:
    return [
        str(tool.path), "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--cuda-graph-trace=node",
        "--force-overwrite=true", "--output", str(job.out_dir / REPORT), *Batch((job,)).argv(),
    ]  # fmt: skip


def stats_argv(tool: Tool, job: Job) -> list[str]:
    report = job.out_dir / f"{REPORT}.nsys-rep"
    return [
        str(tool.path), "stats", "--report", ",".join(launches.STATS_REPORTS), "--format", "csv",
        "--force-export=true", "--output", str(job.out_dir / REPORT), str(report),
    ]  # fmt: skip


class NsysProfiler:
    name = "nsys"
    reads_trace = False  # its Top-5 is the one nsys captures

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    def profile(self, batch: Batch) -> list[Profile | ChildError]:
        """One child a case: nsys captures the first cudaProfilerStart/Stop range of a process."""
        found: list[Profile | ChildError] = []
        for job in batch.jobs:
            try:
                found.append(self._one(job))
            except ChildError as error:
                found.append(error)
        return found

    def _one(self, job: Job) -> Profile:
        one = Batch((job,))
        one.run(profile_argv(self.tool, job), "nsys.log")
        require_child_ran(job)
        prefix = job.out_dir / REPORT
        tables = [launches.stats_table(prefix, report) for report in launches.STATS_REPORTS]
        for table in tables:  # an earlier run's table must not stand in for a report this one lacks
            table.unlink(missing_ok=True)
        one.run(stats_argv(self.tool, job), "nsys-stats.log")
        try:
            capture = launches.read_nsys_stats(prefix)
        except torch_trace.ProfileFormatError as error:
            raise ChildError(str(error)) from None
        tool = f"nsys {self.tool.version}"
        return from_capture(capture, tool, job, [job.out_dir / f"{REPORT}.nsys-rep", *tables])
