#!/usr/bin/env bash
# Where a `--profile=ncu` child's time goes, on a GPU machine: one test node's child (warm-up, then one
# marked iteration) alone, under ncu profiling nothing, and under ncu profiling one kernel with the
# plugin's sections, with the hierarchical roofline section alone, or with the roofline's metrics
# alone. Every output line is stamped with the milliseconds since its run started; each profiled run's
# raw page is kept to compare the metric sets.
#   research/studies/ncu_child_cost.sh NODE KERNEL_FUNCTION_NAME   (writes $OUT/ncu_child_cost/FILE_CASE/)
set -uo pipefail
node=$1 kernel=$2
out=${OUT:-/tmp}/ncu_child_cost/$(basename "${node%%.py*}")_$(echo "$node" | sed 's/.*\[\(.*\)\]/\1/')
mkdir -p "$out"
NCU=${TRAINPERF_NCU:-/usr/local/cuda/bin/ncu}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1
child=(python3 -m pytest "$node" -q --no-header -p no:cacheprovider -p no:xdist -p no:logging
  -W ignore::DeprecationWarning --durations=0 -vv --trainperf-child /tmp/ncu_child_cost)
base=("$NCU" --clock-control none --profile-from-start off --target-processes application-only
  --kernel-name-base function --launch-count 1 --filter-mode per-launch-config --force-overwrite)
sections=(--section SpeedOfLight --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart)
metrics=$(python3 - <<'PY'
from trainperf.profile import ncu, roofline as r
names = [r.SM_CLOCK, r.TIME, *r.TENSOR_OPS.values(), *r.TENSOR_PEAKS.values(), *ncu.PIPE_METRICS, *r.PIPE_PEAKS.values(),
         r.DRAM_RATE, r.DRAM_PEAK, r.DRAM_CLOCK, *(m for level in r.CACHE_LEVELS.values() for m in level), ncu.REGISTERS]
print(",".join(dict.fromkeys(n for n in names if not n.startswith("derived__"))))
PY
)

stamped() {  # NAME COMMAND...: run it, each line of its output prefixed by milliseconds since it started
  local name=$1 start=${EPOCHREALTIME/./}
  shift
  "$@" 2>&1 | while IFS= read -r line; do
    printf '%6d %s\n' $(((${EPOCHREALTIME/./} - start) / 1000)) "$line"
  done > "$out/$name.log"
  printf '%6d exit\n' $(((${EPOCHREALTIME/./} - start) / 1000)) >> "$out/$name.log"
  grep -E "Connected|Profiling|Disconnected|passed|failed|exit|s (setup|call|teardown)" "$out/$name.log" | sed "s/^/$name: /" | cut -c1-160
}

stamped alone "${child[@]}"
stamped ncu_nothing "${base[@]}" --kernel-name "regex:^trainperf_no_such_kernel$" "${sections[@]}" "${child[@]}"
stamped ncu_sections "${base[@]}" --kernel-name "regex:^${kernel}$" "${sections[@]}" --metrics "$metrics" \
  --export "$out/sections" "${child[@]}"
stamped ncu_hierarchical "${base[@]}" --kernel-name "regex:^${kernel}$" \
  --section SpeedOfLight_HierarchicalTensorRooflineChart --metrics "$metrics" --export "$out/hierarchical" "${child[@]}"
stamped ncu_metrics "${base[@]}" --kernel-name "regex:^${kernel}$" --metrics "$metrics" \
  --export "$out/metrics" "${child[@]}"
find /opt/nvidia /usr/local/cuda*/ -name 'SpeedOfLight*.section' -exec cp {} "$out"/ \; 2>/dev/null
for report in sections hierarchical metrics; do
  "$NCU" --import "$out/$report.ncu-rep" --csv --page raw --print-kernel-base function > "$out/$report.csv"
  rm -f "$out/$report.ncu-rep"
done
