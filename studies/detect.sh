#!/usr/bin/env bash
# Detection runs of studies/slowed_case.py on a GPU machine, judged against a copy of the committed
# baselines (the files in baselines/ stay as they are), every catch measured again:
#   TRAINPERF_SLOWED_CASE=gpt2/stack TRAINPERF_SLOWDOWNS=0,0.10 TRAINPERF_SLOWED_RUNS=10 \
#       studies/detect.sh TAG SECONDS [PYTEST_ARGS...]
# Once SECONDS have passed pytest is interrupted, and still writes the JUnit file of the runs that
# finished: $OUT/detection-TAG.xml. Append its rows to the table with studies/detection_rows.py.
set -uo pipefail
tag=$1 seconds=$2
shift 2
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
TRAINPERF_BASELINE_DIR=$(mktemp -d)
export TRAINPERF_BASELINE_DIR
cp baselines/*.json "$TRAINPERF_BASELINE_DIR"/
begin=$SECONDS
timeout -s INT -k 20 "$seconds" python3 -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  studies/slowed_case.py --perf-confirmations=1000 --junitxml="${OUT:-.}/detection-$tag.xml" "$@" 2>&1 | tail -n 4
echo "[$tag: $((SECONDS - begin)) s]"
