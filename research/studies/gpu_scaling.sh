#!/usr/bin/env bash
# One GPU against one pytest-xdist worker per GPU, on one multi-GPU machine: the GPU check, a warm-up of
# the compiled cases (Inductor's caches, so that neither timed run pays for cold compiles), the selection
# on one GPU with the whole host, then the same selection with -n GPUS --perf-gpu-per-worker --dist
# worksteal. Prints each run's wall time, packs run documents and logs into $OUT/NAME.tar.gz (or into
# /tmp/scaling when OUT is unset) and touches /tmp/scaling/NAME/done; research/studies/scaling_table.py compares the runs.
#   research/studies/gpu_scaling.sh NAME GPUS PYTEST_ARGS...
set -uo pipefail
name=$1 gpus=$2
shift 2
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
folder=/tmp/scaling/$name
rm -rf "$folder"
mkdir -p "$folder"
quiet=(-p no:cacheprovider -W ignore::DeprecationWarning -q)

timed() { # timed LABEL PYTEST_ARGS...: one pytest run, its log, and a line with its exit status and wall time
  local label=$1 begin=$SECONDS status
  shift
  python3 -m pytest "${quiet[@]}" --perf-report="$folder/$label" "$@" >"$folder/$label.log" 2>&1
  status=$?
  echo "$label: exit $status in $((SECONDS - begin)) s: $(tail -n 1 "$folder/$label.log")" | tee -a "$folder/walls.txt"
}

python3 ci/gpu_check.py
timed warmup "$@" -k "compile or cuda_graphs or stack" --profile=off
timed one_gpu "$@"
timed workers "$@" -n "$gpus" --perf-gpu-per-worker --dist worksteal
tar -czf "${OUT:-/tmp/scaling}/$name.tar.gz" -C /tmp/scaling --exclude='*.ncu-rep' --exclude='*.nsys-rep' \
  --exclude='*.sqlite' --exclude='trace.json' "$name"
touch "$folder/done"
