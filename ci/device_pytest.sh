#!/usr/bin/env bash
# pytest on a GPU machine with the plugin installed, Nsight Systems' importer libraries found (.devlibs,
# carried there) and the wheels in .whl installed beside it (for a machine that reaches no package index:
# torchao for the FP8 cases; jsonschema and its dependencies where its Python lacks them); writes the
# run's reports to $TRAINPERF_REPORTS/NAME (default /tmp/reports/NAME) and packs its run document,
# roofline plots, ncu raw pages and logs into $OUT/NAME.tar.gz (the .nsys-rep, .ncu-rep, SQLite and trace
# files stay on the machine).
#   ci/device_pytest.sh NAME PYTEST_ARGS...
# STOP_AFTER=SECONDS interrupts pytest (SIGINT) after that long: it stops like Ctrl-C, still writing its
# summary, run document and baselines of the cases that ran, and the files are packed as usual.
set -uo pipefail
name=$1
shift
export LD_LIBRARY_PATH=$PWD/.devlibs:${LD_LIBRARY_PATH:-} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
reports=${TRAINPERF_REPORTS:-/tmp/reports}
mkdir -p "$reports"
timeout -s INT -k 30 "${STOP_AFTER:-0}" python3 -m pytest -p no:cacheprovider -W ignore::DeprecationWarning --perf-report="$reports/$name" "$@" 2>&1 |
  tee "$reports/$name.log"
status=${PIPESTATUS[0]}
tar -czf "$OUT/$name.tar.gz" -C "$reports" --exclude='*.nsys-rep' --exclude='*.ncu-rep' --exclude='*.sqlite' \
  --exclude='trace.json' "$name" "$name.log"
exit "$status"
