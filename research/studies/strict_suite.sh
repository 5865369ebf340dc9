#!/usr/bin/env bash
# One strict run of unchanged code (A/A) against the committed baselines, split over several calls of a
# time-limited GPU machine: each call judges, file by file, the cases the run NAME has not judged yet
# (research/studies/unjudged_cases.py over its run documents), so a run longer than one call goes on in the next
# call on the same machine.
#   research/studies/strict_suite.sh NAME SECONDS TEST_FILE...
# A file is started only with more than 120 s left. Each file's pytest run is packed into
# $OUT/NAME-FILE-HHMMSS.tar.gz (ci/device_pytest.sh); its run document stays in $TRAINPERF_REPORTS
# (.trust/reports, which a warm machine keeps between calls) for the next call. STRICT_ARGS adds
# pytest arguments (--profile=ncu); RECORD_DEVICE and RECORD_GPU_WAIT_S act as in
# research/studies/record_suite.sh.
set -uo pipefail
name=$1 seconds=$2
shift 2
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} TRAINPERF_REPORTS=${TRAINPERF_REPORTS:-$PWD/.trust/reports}
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
prog=strict_suite nothing="nothing judged"
# shellcheck source=research/studies/gpu_ready.sh
source research/studies/gpu_ready.sh
# A call on a fresh machine finds none of the run's documents (a machine keeps them only while warm): say so
documents=$(compgen -G "$TRAINPERF_REPORTS/$name-*/run.json" | wc -l)
if ((documents > 0)); then
  echo "strict_suite: run $name resumes: $documents run document(s) of it in $TRAINPERF_REPORTS"
else
  echo "strict_suite: run $name starts: no run document of it in $TRAINPERF_REPORTS (a new run, or a fresh machine)"
fi
# SECONDS counts from the script's start, the install and the GPU's wait included; a file's run is
# interrupted 30 s before the end, as pytest may take 30 s to stop and pack, so the script ends in SECONDS.
for file in "$@"; do
  left=$((seconds - SECONDS))
  ((left > 120)) || { echo "strict_suite: stopped before $file, $seconds s spent"; break; }
  ids=$(python3 research/studies/unjudged_cases.py "$TRAINPERF_REPORTS/$name-*/run.json" "$file")
  [ -n "$ids" ] || { echo "strict_suite: $file already judged in run $name"; continue; }
  label=$name-$(basename "$file" .py)-$(date +%H%M%S)
  # shellcheck disable=SC2086  # the ids and STRICT_ARGS are words
  STOP_AFTER=$((left - 30)) bash ci/device_pytest.sh "$label" $ids --perf-strict -q -rs ${STRICT_ARGS:-}
  echo "strict_suite: $file: exit $? after $SECONDS s"
done
