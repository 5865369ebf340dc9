"""Nsight Compute backend: the Top-5 comes from nsys (or torch.profiler), then ncu profiles only those
kernels, only inside the marked iteration (``--profile-from-start off``), a few launches per launch
configuration, with the GPU's clocks left as they are (``--clock-control none``). Its raw page gives
each kernel's roofline point."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd

from trainperf.profile.backend import Backend, Job, Profile, ProfileError, child_argv, require_child_ran, run_logged
from trainperf.profile.kernels import ProfileFormatError, short_name
from trainperf.profile.ncu_raw import read_ncu_raw
from trainperf.profile.roofline import PIPE, PIPE_FLOPS, RooflinePoint, roofline
from trainperf.profile.tools import Tool

REPORT = "ncu"  # ncu.ncu-rep and ncu.csv in the job's folder
SECTIONS = ("SpeedOfLight", "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalTensorRooflineChart")
PIPE_METRICS = tuple(PIPE.format(op) for parts in PIPE_FLOPS.values() for op, _ in parts)
LAUNCHES_PER_CONFIG = 1  # profiled launches of each kernel per distinct grid/block/shared-memory shape


def name_base(top: pd.DataFrame) -> str:
    """Match ncu's kernels by mangled name when the Top-5 has them (nsys), else by function name."""
    return "mangled" if top["mangled"].notna().all() else "function"


def kernel_filter(top: pd.DataFrame) -> str:
    """``regex:`` filter that matches exactly the Top-5 kernels."""
    if name_base(top) == "mangled":
        return "regex:^(" + "|".join(re.escape(str(name)) for name in top["mangled"]) + ")$"
    return "regex:(^|::)(" + "|".join(re.escape(str(name)) for name in top["short"].unique()) + ")$"


def profile_argv(tool: Tool, job: Job, top: pd.DataFrame) -> list[str]:
    sections = [arg for section in SECTIONS for arg in ("--section", section)]
    return [
        str(tool.path), "--clock-control", "none", "--profile-from-start", "off",
        "--kernel-name-base", name_base(top), "--kernel-name", kernel_filter(top),
        "--launch-count", str(LAUNCHES_PER_CONFIG), "--filter-mode", "per-launch-config",
        *sections, "--metrics", ",".join(PIPE_METRICS), "--force-overwrite", "--export", str(job.out_dir / REPORT),
        *child_argv(job),
    ]  # fmt: skip


def import_argv(tool: Tool, job: Job, base: str) -> list[str]:
    report = str(job.out_dir / f"{REPORT}.ncu-rep")
    return [str(tool.path), "--import", report, "--csv", "--page", "raw", "--print-kernel-base", base]


class NcuProfiler:
    name = "ncu"

    def __init__(self, tool: Tool, timeline: Backend) -> None:
        self.tool = tool
        self.timeline = timeline  # nsys, or torch.profiler where nsys is missing

    def profile(self, job: Job) -> Profile:
        found = self.timeline.profile(job)
        base = name_base(found.top)
        run_logged(profile_argv(self.tool, job, found.top), job, "ncu.log")
        require_child_ran(job)
        raw_csv = job.out_dir / f"{REPORT}.csv"
        run_logged(import_argv(self.tool, job, base), job, "ncu-import.log", output_name=raw_csv.name)
        try:
            points = roofline(read_ncu_raw(raw_csv))
        except ProfileFormatError as error:
            raise ProfileError(f"ncu: {error}") from None
        key = "mangled" if base == "mangled" else "short"
        return dataclasses.replace(
            found,
            tool=f"{found.tool} + ncu {self.tool.version}",
            top=with_roofline(found.top, points, key),
            roofline=points,
            files=[*found.files, job.out_dir / f"{REPORT}.ncu-rep"],
        )


def with_roofline(top: pd.DataFrame, points: list[RooflinePoint], key: str) -> pd.DataFrame:
    """The Top-5 table with each kernel's roofline columns (empty where ncu profiled none of its launches)."""
    columns = ["kernel", "launches", "precision", "tensor_cores", "intensity", "roof_share", "bound", "reason"]
    found = pd.DataFrame([p.as_dict() for p in points], columns=[*columns, "achieved_flops"])
    if key == "short":
        found["kernel"] = found["kernel"].map(short_name)
    found = found.drop_duplicates("kernel").rename(columns={"kernel": key, "launches": "profiled"})
    return top.merge(found, on=key, how="left")
