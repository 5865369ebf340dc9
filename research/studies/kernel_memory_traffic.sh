#!/usr/bin/env bash
# What a machine whose naive kernels run slow does differently (research/evidence/h200-gpu-bound-noise.md:
# matmul/reference 2.3% slower on some machines at the same SM and memory clocks, drawing more power).
# Nsight Compute, its clocks left alone, reads the naive matmul and transpose of the kernels file at the
# cases' sizes: duration, DRAM bytes read and written, L1 and L2 hit rates, and the DRAM and SM clocks
# while each kernel ran, and the chip's whole `nvidia-smi -q` (its VBIOS, ECC and remapped rows, PCIe
# link, ...). Run it on a slow and a fast machine and compare the two folders.
#   research/studies/kernel_memory_traffic.sh OUT_DIR        # TRAINPERF_NCU names ncu where it is not on PATH
set -euo pipefail
out=$1
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
metrics+=,l1tex__t_sector_hit_rate.pct,dram__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second
run_kernels='
import torch
from custom_kernels.tiled_cuda import MATMULS, TRANSPOSES
a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
x = torch.randn(8192, 4096, device="cuda")
for _ in range(3):
    MATMULS["naive"](a, b)
    TRANSPOSES["naive"](x)
torch.cuda.synchronize()
'
python3 -c "$run_kernels"  # builds the extension outside the profiler
nvidia-smi --query-gpu=name,uuid,clocks.mem,clocks.sm --format=csv,noheader >"$out/gpu.csv"
nvidia-smi -q >"$out/nvidia-smi-q.txt"
"${TRAINPERF_NCU:-ncu}" --clock-control none --kernel-name regex:'matmul_naive|transpose_naive' \
  --metrics "$metrics" --csv --page raw python3 -c "$run_kernels" >"$out/kernel-memory-traffic.csv"
cat "$out/gpu.csv"
