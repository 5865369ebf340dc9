#!/usr/bin/env bash
# Record this GPU's baselines for test files, one pytest run per file, within SECONDS; a later call with
# the same SINCE records only the cases not yet written (research/studies/unrecorded_cases.py), so a recording
# longer than one call of a time-limited machine goes on where the last call stopped (on a fresh
# machine too, once the file recorded so far is committed).
#   research/studies/record_suite.sh NAME SECONDS SINCE TEST_FILE...
# Records into $TRAINPERF_BASELINE_DIR (default .trust/baselines, first filled with the committed files).
# A file is started only with more than 120 s left (one case's three runs). Puts each file's packed run
# (ci/device_pytest.sh) and the device's baseline file in $OUT. With RECORD_DEVICE set to a baseline
# file's name (nvidia-h100-80gb-hbm3), a machine of another GPU records nothing and exits 1. A GPU that
# another process holds, or that throttles, is waited for up to RECORD_GPU_WAIT_S (120) s; then exit 6.
set -uo pipefail
name=$1 seconds=$2 since=$3
shift 3
export TRAINPERF_BASELINE_DIR=${TRAINPERF_BASELINE_DIR:-$PWD/.trust/baselines} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$TRAINPERF_BASELINE_DIR"
for file in baselines/*.json; do  # the committed files, once: later calls go on with what was recorded
  [ -e "$TRAINPERF_BASELINE_DIR/$(basename "$file")" ] || cp "$file" "$TRAINPERF_BASELINE_DIR/"
done
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
prog=record_suite nothing="nothing recorded"
# shellcheck source=research/studies/gpu_ready.sh
source research/studies/gpu_ready.sh
# SECONDS counts from the script's start, the install and the GPU's wait included; a file's run is
# interrupted 30 s before the end, as pytest may take 30 s to stop and pack, so the script ends in SECONDS.
for file in "$@"; do
  left=$((seconds - SECONDS))
  ((left > 120)) || { echo "record_suite: stopped before $file, $seconds s spent"; break; }
  ids=$(python3 research/studies/unrecorded_cases.py "$TRAINPERF_BASELINE_DIR/$slug.json" "$since" "$file")
  [ -n "$ids" ] || { echo "record_suite: $file already recorded"; continue; }
  label=$name-$(basename "$file" .py)
  # shellcheck disable=SC2086  # the ids are words
  STOP_AFTER=$((left - 30)) bash ci/device_pytest.sh "$label" $ids --update-baselines -q -rs
  echo "record_suite: $file: exit $? after $SECONDS s"
  cp "$TRAINPERF_BASELINE_DIR/$slug.json" "$OUT/"
done
