#!/usr/bin/env bash
# A/A runs on a GPU machine: the suite run again and again against the baselines in
# $TRAINPERF_BASELINE_DIR (default .trust/baselines), then optionally the detection runs of
# research/studies/slowed_case.py. Packs run documents, JUnit files, logs and the baselines into $OUT/NAME.tar.gz
# after each run; read them with research/studies/trust_table.py.
#   research/studies/trust_runs.sh NAME RUNS SECONDS TESTS...
# A folder without baseline files is first filled: with TRUST_RECORD=1 by a recording of TESTS on this
# machine (--update-baselines), else with the committed files of baselines/, so a fresh machine judges
# against what is committed rather than recording by accident.
# Starts no new run once SECONDS have passed. TRAINPERF_SLOWED_CASE=workload/case adds the detection runs.
set -uo pipefail
name=$1 runs=$2 seconds=$3
shift 3
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TRAINPERF_BASELINE_DIR=${TRAINPERF_BASELINE_DIR:-$PWD/.trust/baselines}
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
folder=/tmp/trust/$name
mkdir -p "$folder" "$TRAINPERF_BASELINE_DIR"
quiet=(-p no:cacheprovider -W ignore::DeprecationWarning -q)
started=$SECONDS

pack() {  # what the runs left so far, with the baselines, into $OUT: a call stopped by its limit keeps them
  rm -rf "$folder/baselines" && cp -r "$TRAINPERF_BASELINE_DIR" "$folder/baselines"
  tar -czf "$OUT/$name.tar.gz" -C /tmp/trust --exclude='profiles' "$name"
}

timed() {  # timed LABEL PYTEST_ARGS...: one pytest run, its log and a one-line outcome, then packed
  local label=$1 begin=$SECONDS
  shift
  python3 -m pytest "${quiet[@]}" "$@" >"$folder/$label.log" 2>&1
  local status=$?
  echo "$label: exit $status in $((SECONDS - begin)) s: $(tail -n 1 "$folder/$label.log")"
  pack
}

if compgen -G "$TRAINPERF_BASELINE_DIR/*.json" >/dev/null; then
  echo "judged against the baselines in $TRAINPERF_BASELINE_DIR"
elif [[ ${TRUST_RECORD:-0} == 1 ]]; then
  timed base "$@" --update-baselines --perf-report="$folder/base"
else
  cp baselines/*.json "$TRAINPERF_BASELINE_DIR/"
  echo "judged against the committed baselines, copied to $TRAINPERF_BASELINE_DIR"
fi
for run in $(seq 1 "$runs"); do
  ((SECONDS - started < seconds)) || { echo "stopped before run $run: $seconds s spent"; break; }
  stamp=aa-$(date +%H%M%S)
  timed "$stamp" "$@" --perf-report="$folder/$stamp"
done
if [[ -n ${TRAINPERF_SLOWED_CASE:-} ]]; then
  timed detection research/studies/slowed_case.py --perf-confirmations=1000 --junitxml="$folder/detection.xml"
fi
pack
