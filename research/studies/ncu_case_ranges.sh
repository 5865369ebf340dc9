#!/usr/bin/env bash
# ncu_case_ranges.py under ncu, then its report read back four ways; everything into $OUT/ncu-ranges.
set -u
ncu=${REAL_NCU:-/usr/local/cuda/bin/ncu}
out=$OUT/ncu-ranges
mkdir -p "$out"
"$ncu" --version > "$out/version.txt"
"$ncu" --help > "$out/help.txt" 2>&1
py=research/studies/ncu_case_ranges.py
common=(--clock-control none --profile-from-start off --target-processes application-only
  --kernel-name-base function --launch-count 1 --filter-mode per-launch-config --section SpeedOfLight)
"$ncu" "${common[@]}" --nvtx --force-overwrite --export /tmp/r python3 "$py" > "$out/profile.log" 2>&1
"$ncu" "${common[@]}" --force-overwrite --export /tmp/plain python3 "$py" > "$out/profile-plain.log" 2>&1
"$ncu" --import /tmp/r.ncu-rep --csv --page raw --print-kernel-base function > "$out/raw.csv" 2>&1
"$ncu" --import /tmp/r.ncu-rep --csv --page raw --print-kernel-base function --print-nvtx-rename kernel > "$out/raw-rename.csv" 2>&1
"$ncu" --import /tmp/r.ncu-rep --csv --page raw --print-kernel-base function --nvtx-include "trainperf_case:b/" > "$out/raw-include-b.csv" 2>&1
"$ncu" --import /tmp/r.ncu-rep --csv --page raw --print-kernel-base function --nvtx-include "trainperf_case:c/" > "$out/raw-include-c.csv" 2>&1
"$ncu" --import /tmp/r.ncu-rep --page details --print-details all --print-kernel-base function > "$out/details.txt" 2>&1
"$ncu" --import /tmp/plain.ncu-rep --csv --page raw --print-kernel-base function > "$out/raw-plain.csv" 2>&1
ls "$(dirname "$(readlink -f "$ncu")")"/extras/python > "$out/python-dir.txt" 2>&1
for f in "$out"/*.csv; do cut -c1-300 "$f" | head -12 > "$f.head"; done
