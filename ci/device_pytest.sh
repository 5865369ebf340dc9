#!/usr/bin/env bash
# pytest on a GPU machine with the plugin installed and Nsight Systems' importer libraries found
# (.devlibs, carried there); writes the run's reports to $TRAINPERF_REPORTS/NAME (default
# /tmp/reports/NAME) and packs its run document, roofline plots, ncu raw pages and logs into
# $OUT/NAME.tar.gz (the .nsys-rep, .ncu-rep, SQLite and trace files stay on the machine).
#   ci/device_pytest.sh NAME PYTEST_ARGS...
# STOP_AFTER=SECONDS interrupts pytest (SIGINT) after that long: it stops like Ctrl-C, still writing its
# summary, run document and baselines of the cases that ran, and the files are packed as usual.
set -uo pipefail
name=$1
shift
export LD_LIBRARY_PATH=$PWD/.devlibs:${LD_LIBRARY_PATH:-} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
reports=${TRAINPERF_REPORTS:-/tmp/reports}
mkdir -p "$reports"
timeout -s INT -k 30 "${STOP_AFTER:-0}" python3 -m pytest -p no:cacheprovider -W ignore::DeprecationWarning --perf-report="$reports/$name" "$@" 2>&1 |
  tee "$reports/$name.log"
status=${PIPESTATUS[0]}
tar -czf "$OUT/$name.tar.gz" -C "$reports" --exclude='*.nsys-rep' --exclude='*.ncu-rep' --exclude='*.sqlite' \
  --exclude='trace.json' "$name" "$name.log"
exit "$status"
