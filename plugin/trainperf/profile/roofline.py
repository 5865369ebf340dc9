"""Roofline of profiled kernels from Nsight Compute's raw metrics. Pure: pandas only.

FLOPs: tensor-core operations (``sm__ops_path_tensor_src_*``) plus the FP32/FP16/FP64 pipes (an FMA
counts twice, a packed HFMA2 four times). Bytes: DRAM traffic (read + write). Ceilings: the device's
own peaks as ncu reports them, times the clock it measured (dense Hopper wgmma rates for tensor cores,
the FFMA/DFMA issue rates for the pipes, DRAM bytes per cycle); no table of GPUs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

import pandas as pd

SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
TIME = "gpu__time_duration.sum"
TENSOR_OPS = {
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "fp16": "sm__ops_path_tensor_src_fp16.sum",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "fp64 tensor": "sm__ops_path_tensor_src_fp64.sum",
    "fp8": "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
}
TENSOR_PEAKS = {  # dense (sparsity off) operations per cycle, whole chip
    "bf16": "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
    "fp16": "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
    "tf32": "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained",
    "fp8": "sm__ops_path_tensor_src_fp8_sparsity_off.sum.peak_sustained",
}
PIPE = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
PIPE_FLOPS = {  # precision -> (instruction, FLOPs per instruction)
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
}
PIPE_PEAKS = {  # FMA instructions per cycle, whole chip; an FMA is 2 FLOPs
    "fp32": "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "fp64": "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
}
DRAM_RATE = "dram__bytes.sum.per_second"
DRAM_PEAK = "dram__bytes.sum.peak_sustained"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"
CACHE_LEVELS = {  # level -> (bytes per second, peak bytes per cycle, clock), as ncu's hierarchical roofline
    "l2": ("derived__lts__lts2xbar_bytes.sum.per_second", "derived__lts__lts2xbar_bytes.sum.peak_sustained",
           "lts__cycles_elapsed.avg.per_second"),
    "l1": ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
           "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained", "l1tex__cycles_elapsed.avg.per_second"),
}  # fmt: skip
LATENCY_SHARE = 0.3  # under this share of its roof a kernel is neither compute- nor memory-bound
LAUNCH_US = 10.0  # a latency-bound kernel shorter than this per launch is dominated by its launch


@dataclass(frozen=True)
class RooflinePoint:
    kernel: str
    launches: int
    time_s: float
    flops: float
    dram_bytes: float
    precision: str  # the precision that did most FLOPs ("none" without FLOPs)
    tensor_cores: bool
    intensity: float  # FLOP per DRAM byte
    achieved_flops: float  # FLOP/s
    peak_flops: float | None  # roof of ``precision``, FLOP/s
    peak_bandwidth: float | None  # DRAM roof, B/s
    attainable_flops: float | None
    roof_share: float | None  # achieved over attainable (or DRAM bandwidth share without FLOPs)
    bound: str  # "compute", "memory" or "latency"
    reason: str
    l2_bytes: float = 0.0  # L2 -> SM traffic, for the hierarchical view
    l1_bytes: float = 0.0  # L1 -> registers traffic (loads, stores)
    peak_l2_bandwidth: float | None = None
    peak_l1_bandwidth: float | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _value(row: pd.Series, metric: str) -> float:
    value = row.get(metric)
    return 0.0 if value is None or pd.isna(value) else float(value)


def flops_by_precision(row: pd.Series) -> dict[str, float]:
    """FLOPs of one launch per precision: tensor paths and the FP32/FP16/FP64 pipes."""
    flops = {name: _value(row, metric) for name, metric in TENSOR_OPS.items()}
    for precision, parts in PIPE_FLOPS.items():
        flops[precision + " pipe"] = sum(weight * _value(row, PIPE.format(op)) for op, weight in parts)
    return flops


def _peak(row: pd.Series, precision: str) -> float | None:
    clock = _value(row, SM_CLOCK)
    if precision in TENSOR_PEAKS and _value(row, TENSOR_PEAKS[precision]):
        return _value(row, TENSOR_PEAKS[precision]) * clock
    base = precision.removesuffix(" pipe")
    if base in PIPE_PEAKS and _value(row, PIPE_PEAKS[base]):
        return 2.0 * _value(row, PIPE_PEAKS[base]) * clock
    return None


def launch_point(row: pd.Series) -> dict[str, object]:
    """Additive figures of one launch: time, FLOPs per precision, DRAM bytes, and its roofs."""
    time_s = _value(row, TIME)
    flops = flops_by_precision(row)
    precision = max(flops, key=lambda name: flops[name]) if any(flops.values()) else "none"
    bandwidth = _value(row, DRAM_PEAK) * _value(row, DRAM_CLOCK) or None
    point: dict[str, object] = {
        "kernel": row["Kernel Name"],
        "time_s": time_s,
        "flops": sum(flops.values()),
        "dram_bytes": _value(row, DRAM_RATE) * time_s,
        "precision": precision,
        "peak_flops": _peak(row, precision) if precision != "none" else None,
        "peak_bandwidth": bandwidth,
    }
    for level, (rate, peak, clock) in CACHE_LEVELS.items():
        point[f"{level}_bytes"] = _value(row, rate) * time_s
        point[f"peak_{level}_bandwidth"] = _value(row, peak) * _value(row, clock) or None
    return point


def roofline(raw: pd.DataFrame) -> list[RooflinePoint]:
    """One point per kernel (its launches summed), in order of total time."""
    if raw.empty:
        return []
    launches = pd.DataFrame([launch_point(row) for _, row in raw.iterrows()])
    points = [_point(str(name), group) for name, group in launches.groupby("kernel", sort=False)]
    return sorted(points, key=lambda p: p.time_s, reverse=True)


def _point(kernel: str, launches: pd.DataFrame) -> RooflinePoint:
    time_s, flops, dram = (float(launches[c].sum()) for c in ("time_s", "flops", "dram_bytes"))
    precision = str(launches.groupby("precision")["flops"].sum().idxmax()) if flops else "none"
    peak = _mean(launches.loc[launches["precision"] == precision, "peak_flops"]) if flops else None
    bandwidth = _mean(launches["peak_bandwidth"])
    intensity = flops / dram if dram else float("inf")
    achieved = flops / time_s if time_s else 0.0
    attainable = None if peak is None or bandwidth is None else min(peak, intensity * bandwidth)
    if attainable:
        share: float | None = achieved / attainable
    else:  # no FLOPs, or a pipe without a peak metric: judge it by its DRAM traffic alone
        share = None if not bandwidth or not time_s else dram / time_s / bandwidth
    bound = _bound(flops, intensity, peak, bandwidth, share)
    point = RooflinePoint(
        kernel, len(launches), time_s, flops, dram, precision, precision in TENSOR_OPS, intensity, achieved,
        peak, bandwidth, attainable, share, bound, "",
        l2_bytes=float(launches["l2_bytes"].sum()), l1_bytes=float(launches["l1_bytes"].sum()),
        peak_l2_bandwidth=_mean(launches["peak_l2_bandwidth"]), peak_l1_bandwidth=_mean(launches["peak_l1_bandwidth"]),
    )  # fmt: skip
    return dataclasses.replace(point, reason=reason(point))


def _mean(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.mean()) if len(values) else None


def _bound(flops: float, intensity: float, peak: float | None, bandwidth: float | None, share: float | None) -> str:
    if share is None or share < LATENCY_SHARE:
        return "latency"
    if not flops or peak is None or bandwidth is None:
        return "memory"
    return "memory" if intensity < peak / bandwidth else "compute"


def reason(point: RooflinePoint) -> str:
    """One line a tuner can act on."""
    share = "n/a" if point.roof_share is None else f"{point.roof_share:.0%}"
    per_launch_us = point.time_s * 1e6 / max(point.launches, 1)
    if point.bound == "latency" and per_launch_us < LAUNCH_US:
        return f"launch-bound: {per_launch_us:.1f} us per launch at {share} of its roof; fuse it with its neighbours"
    if point.bound == "latency" and point.tensor_cores:
        return (
            f"{point.precision} tensor cores at {share} of their roof over {per_launch_us:.0f} us per launch: "
            "check that the shapes are multiples of 64 (pad them) and that the tiles fill the GPU"
        )
    if point.bound == "latency":
        return (
            f"latency-bound: {share} of its roof over {per_launch_us:.0f} us per launch; too little parallel work "
            "in flight (occupancy, serial reductions, atomics)"
        )
    if point.bound == "memory":
        return f"memory-bound at {point.intensity:.2g} FLOP/B, {share} of the DRAM roof: fuse it or move fewer bytes"
    if point.precision == "fp32 pipe":
        return f"FP32 FFMA path at {share} of the FP32 roof: enable TF32 or bf16 tensor cores"
    if point.tensor_cores and point.roof_share is not None and point.roof_share >= 0.8:
        return f"compute-bound on {point.precision} tensor cores at {share} of the roof: near the ceiling"
    if point.tensor_cores:
        return f"compute-bound on {point.precision} tensor cores at {share} of the roof: tile shape or occupancy"
    return f"compute-bound on the {point.precision} at {share} of its roof"
