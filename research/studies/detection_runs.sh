#!/usr/bin/env bash
# The detection study of rows 4 and 5 (research/evidence/trust.md) on a GPU machine, resumed where its ledger
# stops: research/studies/detection_plan.py names the cases and slowdowns that still lack judged runs, and this runs
# them with research/studies/slowed_case.py, in the plan's order, until SECONDS have passed.
#   research/studies/detection_runs.sh NAME SECONDS LEDGER [CASE...]
# Judged against the committed baseline file of this machine's GPU, copied into $TRAINPERF_BASELINE_DIR.
# Each pytest session runs at most DETECTION_CHUNK (5) runs of one case and slowdown; every catch is measured
# again at the session's end, so a stop loses at most one session's catches. A session is packed into
# $OUT/NAME-CASE-SLOWDOWN-HHMMSS.tar.gz (ci/device_pytest.sh) with its JUnit file, detection.xml; its copy
# in $TRAINPERF_REPORTS (.trust/reports, which a warm machine keeps) tells the next call of the same NAME
# what is done. After the calls, research/studies/detection_rows.py appends the JUnit files' runs to LEDGER.
set -uo pipefail
name=$1 seconds=$2 ledger=$3
shift 3
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} TRAINPERF_REPORTS=${TRAINPERF_REPORTS:-$PWD/.trust/reports}
export TRAINPERF_BASELINE_DIR=${TRAINPERF_BASELINE_DIR:-$PWD/.trust/detection-baselines}
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
prog=detection_runs nothing="nothing slowed"
# shellcheck source=research/studies/gpu_ready.sh
source research/studies/gpu_ready.sh
committed=baselines/$slug.json
[ -f "$committed" ] || { echo "$prog: no committed baseline file for $slug ($committed): $nothing" >&2; exit 1; }
mkdir -p "$TRAINPERF_BASELINE_DIR" "$TRAINPERF_REPORTS"
compgen -G "$TRAINPERF_BASELINE_DIR/*.json" >/dev/null || cp baselines/*.json "$TRAINPERF_BASELINE_DIR/"
shopt -s nullglob
done_here=("$TRAINPERF_REPORTS/$name"-*/detection.xml)
only=()
(($# == 0)) || only=(--cases "$@")
plan=$(python3 research/studies/detection_plan.py "$committed" "$ledger" "${done_here[@]}" "${only[@]}") || exit
[ -n "$plan" ] || { echo "$prog: every case of $committed has its judged runs in $ledger"; exit 0; }
# A session starts only with more time left than the last session took (a two-GPU case's five runs take
# about 200 s), and than DETECTION_SESSION_S (120) before the first, so that none is cut off halfway.
first=${DETECTION_SESSION_S:-120} needed=${DETECTION_SESSION_S:-120}
while read -r case on slowdown runs; do
  while ((runs > 0)); do
    left=$((seconds - SECONDS))
    ((left > needed)) || { echo "$prog: stopped before $case at $slowdown, $seconds s spent"; exit 0; }
    started=$SECONDS
    chunk=$((runs < ${DETECTION_CHUNK:-5} ? runs : ${DETECTION_CHUNK:-5}))
    label=$name-${case//\//-}-$slowdown-$(date +%H%M%S)
    TRAINPERF_SLOWED_CASE=$case TRAINPERF_SLOWED_ON=$on TRAINPERF_SLOWED_HOST_WORK=ops \
      TRAINPERF_SLOWDOWNS=$slowdown TRAINPERF_SLOWED_RUNS=$chunk STOP_AFTER=$((left - 30)) \
      bash ci/device_pytest.sh "$label" research/studies/slowed_case.py --perf-confirmations=1000 -q \
      --junitxml="$TRAINPERF_REPORTS/$label/detection.xml" </dev/null >/dev/null  # the plan is stdin
    echo "$prog: $case at $slowdown on the $on, $chunk runs: exit $? after $SECONDS s"
    runs=$((runs - chunk))
    needed=$((SECONDS - started > first ? SECONDS - started : first))
  done
done <<<"$plan"
