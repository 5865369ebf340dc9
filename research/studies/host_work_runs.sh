#!/usr/bin/env bash
# Detection by the host-work check, on a GPU machine: a copy of the committed baselines first gains
# SESSIONS counted runs of each unslowed case (--perf-calibrate, one session each, as a few nights
# after a recording would add), then every case is slowed by host-side work (research/studies/slowed_case.py)
# and judged against that copy.
#   research/studies/host_work_runs.sh OUT CASES [SESSIONS]     # CASES: lstm_lm/reference,gpt2/no_host_sync
# SLOWDOWNS (0.1), RUNS (10) and TRAINPERF_SLOWED_HOST_WORK (busy, or ops) choose the slowed runs;
# BASELINES names the folder copied (baselines/, or an earlier OUT with SESSIONS 0).
set -uo pipefail
# Under a time limit the running pytest gets SIGTERM too and is waited for: it writes the reports of
# what it measured, and nothing of it runs on into whatever the caller starts next. `timeout` signals
# the whole group, so pytest may get it twice; it takes the copy as the same stop.
child=
trap 'if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; wait "$child"; fi; exit 143' TERM
in_child() { "$@" & child=$!; wait "$child"; local status=$?; child=; return "$status"; }
out=$1 cases=$2 sessions=${3:-3}
copy=$(mktemp -d)
cp "${BASELINES:-baselines}"/*.json "$copy"/
mkdir -p "$out"
export TRAINPERF_SLOWED_CASE=$cases TRAINPERF_BASELINE_DIR=$copy TRAINPERF_SLOWED_ON=host PYTHONUNBUFFERED=1
study=(python3 -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning research/studies/slowed_case.py
  --baseline-dir="$copy")
for i in $(seq "$sessions"); do
  TRAINPERF_SLOWDOWNS=0 TRAINPERF_SLOWED_RUNS=1 in_child "${study[@]}" --perf-calibrate --perf-report="$out/calibrate$i" \
    --junitxml="$out/calibrate$i.xml" >"$out/calibrate$i.log" 2>&1
  tail -1 "$out/calibrate$i.log"
done
TRAINPERF_SLOWDOWNS=${SLOWDOWNS:-0.1} TRAINPERF_SLOWED_RUNS=${RUNS:-10} in_child "${study[@]}" --perf-report="$out/slowed" \
  --junitxml="$out/slowed.xml" >"$out/slowed.log" 2>&1
tail -1 "$out/slowed.log"
cp "$copy"/*.json "$out"/
