#!/usr/bin/env bash
# The plugin's timing tests (a case recorded, then gated; a slowed case; a throttled one; a case slower once;
# nights of passing runs added to the history; speedups short of their minimum, within and beyond the
# measured noise) run RUNS times in a row with BUSY processes spinning beside them, as on a shared CI
# machine; prints each run's outcome and the count of failed runs; a failed run's whole output goes to
# LOGS/runN.log. Exit status 1 when any run failed.
#   research/studies/timing_tests_under_load.sh [RUNS=20] [BUSY=1] [LOGS=/tmp/timing-under-load]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
busy=${2:-1}
logs=${3:-/tmp/timing-under-load}
mkdir -p "$logs"
pids=()
for _ in $(seq "$busy"); do
  python -c "while True: pass" &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
failed=0
for run in $(seq "$runs"); do
  if out=$(pytest tests/test_plugin.py -q -p no:cacheprovider --run-slow \
    -k "update_writes or slower_case or throttled or slower_once or history_adds or speedup_short" 2>&1); then
    echo "run $run: $(echo "$out" | tail -n 1)"
  else
    failed=$((failed + 1))
    echo "$out" >"$logs/run$run.log"
    echo "run $run: FAILED: $(echo "$out" | grep -E '^FAILED ' | tr '\n' ' ') (log: $logs/run$run.log)"
  fi
done
echo "$failed of $runs runs failed with $busy busy process(es) beside them"
[ "$failed" -eq 0 ]
