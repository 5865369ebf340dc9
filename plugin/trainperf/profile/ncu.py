"""Nsight Compute backend: each case's Top-5 comes from the torch.profiler trace of the test process's
counted iterations (a child's where there is none), then one ncu child runs every case of the batch and
profiles only those kernels (by function name), only inside the marked iterations (``--profile-from-start
off``), one launch per launch configuration in the whole child, with the GPU's clocks left as they are
(``--clock-control none``). A child costs seconds to start and its Top-5 kernels recur across a ladder's
cases: one for all of them profiles each shape once. Each case's launches are matched back to its Top-5
kernels by function name, grid, block and registers, so a shape two cases share has the point of the
first case that ran it (the report's NVTX ranges, ``trainperf_case:<case>``, say which)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from trainperf.child.process import ChildError, last_line
from trainperf.child.protocol import CASE_STARTS
from trainperf.measure.torch_trace import ProfileFormatError, short_name
from trainperf.profile import roofline as roof
from trainperf.profile.backend import Backend, Profile
from trainperf.profile.job import Batch, Job, require_child_ran
from trainperf.profile.ncu_raw import read_ncu_raw
from trainperf.profile.roofline import RooflinePoint, roofline
from trainperf.profile.tools import Tool
from trainperf.spec.case import case_folder

REPORT = "ncu"  # ncu.ncu-rep and ncu.csv in the batch's folder
LOG = "ncu.log"
# the hierarchical roofline alone (9 replay passes a kernel where SpeedOfLight and the plain roofline
# chart made it 17): it defines the L1 and L2 byte metrics; METRICS add the rest the roofline reads
SECTIONS = ("SpeedOfLight_HierarchicalTensorRooflineChart",)
PIPE_METRICS = tuple(roof.PIPE.format(op) for parts in roof.PIPE_FLOPS.values() for op, _ in parts)
# the test process compiled this case already: the child's compile hits the caches
CHILD_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}
LOOK_ALIKE = (
    "not profiled: another Top-5 kernel has its function name, grid, block and registers; ncu cannot tell them apart"
)
# ncu's message (once a process) when the GPU has no room to save what a replayed kernel may overwrite
HOST_BACKUP = "Backing up device memory in system memory"
SLOW_REPLAY = (
    "ncu replayed its kernels from host memory: the GPU had no room beside the case's memory to save what a "
    "replayed kernel may overwrite, so its profile took longer (its figures are not affected)"
)
REGISTERS = "launch__registers_per_thread"  # with grid and block, tells a function's instantiations apart
LAUNCHES_PER_CONFIG = 1  # profiled launches of each kernel per distinct grid/block/shared-memory shape
_READ = (
    roof.TIME, roof.SM_CLOCK, *roof.TENSOR_OPS.values(), *roof.TENSOR_PEAKS.values(), *PIPE_METRICS,
    *roof.PIPE_PEAKS.values(), roof.DRAM_RATE, roof.DRAM_PEAK, roof.DRAM_CLOCK,
    *(metric for level in roof.CACHE_LEVELS.values() for metric in level), REGISTERS,
)  # fmt: skip
# what the roofline reads (the section's own derived__ metrics aside), and registers per thread
METRICS = tuple(dict.fromkeys(metric for metric in _READ if not metric.startswith("derived__")))


def kernel_filter(tops: Sequence[pd.DataFrame]) -> str:
    """``regex:`` filter on ncu's function names that matches every case's Top-5 kernels."""
    names = dict.fromkeys(str(name) for top in tops for name in top["short"])
    return "regex:(^|::)(" + "|".join(re.escape(name) for name in names) + ")$"


def profile_argv(tool: Tool, batch: Batch, tops: Sequence[pd.DataFrame]) -> list[str]:
    sections = [arg for section in SECTIONS for arg in ("--section", section)]
    return [
        str(tool.path), "--clock-control", "none", "--profile-from-start", "off",
        "--target-processes", "application-only", "--nvtx",
        "--kernel-name-base", "function", "--kernel-name", kernel_filter(tops),
        "--launch-count", str(LAUNCHES_PER_CONFIG), "--filter-mode", "per-launch-config",
        *sections, "--metrics", ",".join(METRICS),
        "--force-overwrite", "--export", str(batch.out_dir / REPORT),
        *batch.argv(),
    ]  # fmt: skip


def import_argv(tool: Tool, batch: Batch) -> list[str]:
    report = str(report_file(batch))
    return [str(tool.path), "--import", report, "--csv", "--page", "raw", "--print-kernel-base", "function"]


class NcuProfiler:
    name = "ncu"
    reads_trace = True

    def __init__(self, tool: Tool, timeline: Backend) -> None:
        self.tool = tool
        self.timeline = timeline  # the torch.profiler trace: the Top-5 to profile

    def profile(self, batch: Batch) -> list[Profile | ChildError]:
        """Every case with a Top-5 profiled in one ncu child; a case the child ran no marked iteration of
        (its test failed there) has the reason, the others their profile."""
        found = self.timeline.profile(batch)
        ready = {job: top for job, top in zip(batch.jobs, found, strict=True) if isinstance(top, Profile)}
        if not ready:
            return found
        child = Batch(tuple(ready))
        raw = self._raw_page(child, [top.top for top in ready.values()])
        slow = host_backup_case(child.out_dir / LOG)
        return [
            self._one(job, ready[job], raw, child, slow_replay=slow == job.out_dir.name) if job in ready else top
            for job, top in zip(batch.jobs, found, strict=True)
        ]

    def _raw_page(self, child: Batch, tops: list[pd.DataFrame]) -> pd.DataFrame | ChildError:
        """The child run under ncu (its status aside: a case whose test failed there lacks its marked
        iteration alone), then its report's raw page."""
        log = child.out_dir / LOG
        child.forget_earlier(report_file(child))
        try:
            child.run(profile_argv(self.tool, child, tops), LOG, extra_env=CHILD_ENV, check=False)
            if not report_file(child).is_file():
                text = log.read_text(encoding="utf-8", errors="replace")
                raise ChildError(f"ncu wrote no report: {last_line(text)} (log: {log})")
            child.run(import_argv(self.tool, child), "ncu-import.log", output_name=f"{REPORT}.csv")
            return read_ncu_raw(child.out_dir / f"{REPORT}.csv")
        except ProfileFormatError as error:
            return ChildError(f"ncu: {error}")
        except ChildError as error:
            return error

    def _one(
        self, job: Job, found: Profile, raw: pd.DataFrame | ChildError, child: Batch, slow_replay: bool
    ) -> Profile | ChildError:
        """The case's Top-5 with the roofline points of its kernels' launches in the child's raw page."""
        if isinstance(raw, ChildError):
            return raw
        try:
            require_child_ran(job, child.out_dir / LOG)
            points = roofline(label_launches(raw, found.configs))
        except ProfileFormatError as error:
            return ChildError(f"ncu: {error}")
        except ChildError as error:
            return error
        return dataclasses.replace(
            found,
            tool=f"{found.tool} + ncu {self.tool.version}",
            top=with_roofline(found.top, points, look_alikes(found.configs)),
            roofline=points,
            files=[*found.files, report_file(child)],
            caveat=SLOW_REPLAY if slow_replay else None,
        )


def host_backup_case(log: Path) -> str | None:
    """The folder name of the case in whose marked iteration ncu began to save device memory in host
    memory (its log says so once, after the child's line for that case); None where it did not."""
    starts = re.compile(re.escape(CASE_STARTS).replace(re.escape("{key}"), r"(\S+)"))
    case = None
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if (started := starts.search(line)) is not None:
            case = started.group(1)
        elif HOST_BACKUP in line and case is not None:
            return case_folder(log.parent, case).name
    return None


def report_file(batch: Batch) -> Path:
    return batch.out_dir / f"{REPORT}.ncu-rep"


def label_launches(raw: pd.DataFrame, configs: pd.DataFrame) -> pd.DataFrame:
    """ncu's launches renamed to the full name of the Top-5 kernel with the same function name, grid, block
    (and registers per thread, where both sides have them); launches that match none, or several (two
    instantiations of one function that launch alike), are dropped."""
    missing = [c for c in ("Grid Size", "Block Size") if c not in raw.columns]
    if missing:
        raise ProfileFormatError(f"ncu raw page without {missing}: cannot match launches to kernels")
    with_registers = REGISTERS in raw.columns
    keys = raw["Kernel Name"].map(short_name) + " " + raw["Grid Size"] + " " + raw["Block Size"]
    if with_registers:
        keys += " " + raw[REGISTERS].fillna(-1).astype(int).astype(str)
    owners = _owners(configs, with_registers)
    unique = {key: names[0] for key, names in owners.items() if len(names) == 1}
    labelled = raw.assign(**{"Kernel Name": keys.map(unique)})
    return labelled[labelled["Kernel Name"].notna()].reset_index(drop=True)


def _owners(configs: pd.DataFrame, with_registers: bool) -> pd.Series:
    """Per launch shape (function name, grid, block, registers), the Top-5 kernels that launch with it."""
    shapes = configs["short"] + " " + configs["grid"] + " " + configs["block"]
    if with_registers and configs["registers"].notna().all():
        shapes += " " + configs["registers"].astype(int).astype(str)
    return configs.assign(key=shapes).groupby("key")["name"].unique()


def look_alikes(configs: pd.DataFrame) -> set[str]:
    """Top-5 kernels that share a launch shape with another one: ncu profiles one launch of a shape only."""
    return {name for names in _owners(configs, True) if len(names) > 1 for name in names}


def with_roofline(top: pd.DataFrame, points: list[RooflinePoint], look_alike: set[str] | None = None) -> pd.DataFrame:
    """The Top-5 table with each kernel's roofline columns (empty where ncu profiled none of its launches,
    with the reason where another Top-5 kernel launches alike)."""
    columns = ["kernel", "launches", "precision", "tensor_cores", "intensity", "roof_share", "bound", "reason"]
    found = pd.DataFrame([p.as_dict() for p in points], columns=[*columns, "achieved_flops"])
    found = found.rename(columns={"kernel": "name", "launches": "profiled"})
    table = top.merge(found, on="name", how="left")
    alike = table["name"].isin(look_alike or set()) & table["bound"].isna()
    table["reason"] = table["reason"].astype(object)
    table.loc[alike, "reason"] = LOOK_ALIKE
    return table
