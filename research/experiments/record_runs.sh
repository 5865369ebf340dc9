#!/usr/bin/env bash
# On a GPU machine: record cases (CASE=NODE pairs) into .trust/bl/nvidia-h200.json, a copy of the
# committed H200 baselines that stays on a warm machine between calls, skipping the cases that file
# already holds from a recording since SINCE (ISO time, UTC); the file is copied to $OUT after.
#   SINCE=2026-12-01T21:00 STOP_AFTER=530 bash research/experiments/record_runs.sh NAME CASE=NODE...
set -u
name=$1
shift
mkdir -p .trust/bl
[ -e .trust/bl/nvidia-h200.json ] || cp baselines/nvidia-h200.json .trust/bl/
nodes=()
for pair in "$@"; do
  case_key=${pair%%=*}
  if python3 -c "import json,sys; e=json.load(open('.trust/bl/nvidia-h200.json'))['cases'].get(sys.argv[1]); \
sys.exit(0 if e and e['date'] >= sys.argv[2] else 1)" "$case_key" "${SINCE:?SINCE=ISO time}"; then
    echo "record_runs: $case_key recorded since $SINCE, skipped"
  else
    nodes+=("${pair#*=}")
  fi
done
echo "== $name $(date -u +%T): ${#nodes[@]} cases"
if [ "${#nodes[@]}" -gt 0 ]; then
  bash ci/device_pytest.sh "$name" "${nodes[@]}" --baseline-dir=.trust/bl --update-baselines -q
fi
cp .trust/bl/nvidia-h200.json "$OUT/"
echo "== end $name $(date -u +%T)"
