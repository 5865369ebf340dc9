#!/usr/bin/env bash
# The nightly job: the GPU's state first, then every case gated strictly and the failed ones profiled
# (TRAINPERF_PROFILE_CASES=all profiles every case), with its JUnit file and report kept in OUT.
#   ci/nightly.sh OUT [PYTEST_ARGS...]            on a GPU runner (TRAINPERF_GPUS=N: N workers, one GPU each)
#   ci/nightly.sh --dry-run OUT [PYTEST_ARGS...]  on a CPU: tiny sizes, torch.profiler, no strict gate
# With GITHUB_STEP_SUMMARY set (GitHub Actions), the run's summary is appended there (trainperf summary).
# A night that fails bisects each case that failed on its work from the last green night's commit (kept in
# TRAINPERF_LAST_GREEN_FILE, default .trainperf/last-green-commit) to HEAD, within
# TRAINPERF_BISECT_BUDGET_S (1200) seconds; the culprits go into run.json, the report and the summary.
# torch.compile's cache and the CUDA extensions' builds live under .trainperf/compile unless
# TORCHINDUCTOR_CACHE_DIR and TORCH_EXTENSIONS_DIR say otherwise; ci/nightly.yml keeps them between nights.
# Exit status: pytest's (0 all passed, 1 a case failed: regression or accuracy, 2 interrupted, 3 internal
# error, 4 usage error such as an unreadable baseline file), 1 when no test ran, or ci/gpu_check.py's
# (6 the GPU is busy or throttled, 7 no GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
dry_run=0
if [ "${1:-}" = "--dry-run" ]; then
  dry_run=1
  shift
fi
out=${1:?usage: ci/nightly.sh [--dry-run] OUT [PYTEST_ARGS...]}
shift
mkdir -p "$out"
compile_cache=$PWD/.trainperf/compile
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$compile_cache/inductor}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$compile_cache/extensions}
for cache in "$TORCHINDUCTOR_CACHE_DIR" "$TORCH_EXTENSIONS_DIR"; do
  if [ -d "$cache" ]; then
    echo "nightly: compile cache $cache: $(du -sh "$cache" | cut -f1) kept from earlier runs" >&2
  else
    echo "nightly: compile cache $cache: empty, so this run compiles from scratch" >&2
  fi
done
if [ "$dry_run" -eq 1 ]; then
  python ci/gpu_check.py --allow-cpu || exit $?
  gate=(--perf-device=cpu --profile=torch)
else
  python ci/gpu_check.py || exit $?
  gate=(--perf-strict --profile=ncu)
  # ncu takes tens of seconds a case: a night profiles the cases that failed, to explain them
  export TRAINPERF_PROFILE_CASES=${TRAINPERF_PROFILE_CASES:-failed}
fi
workers=()
if [ "${TRAINPERF_GPUS:-1}" -gt 1 ]; then
  workers=(-n "$TRAINPERF_GPUS" --perf-gpu-per-worker --dist worksteal)
fi
last_green=${TRAINPERF_LAST_GREEN_FILE:-.trainperf/last-green-commit}
status=0
python -m pytest perf_tests "${gate[@]}" "${workers[@]}" --junitxml="$out/junit.xml" --perf-report="$out/report" \
  "$@" || status=$?
run_doc=$out/report/run.json
if [ "$status" -eq 1 ] && [ -f "$run_doc" ]; then
  if [ -s "$last_green" ]; then  # a bisection never changes the night's status
    python -m trainperf.cli.main bisect --run "$run_doc" --since "$(cat "$last_green")" \
      --budget-s "${TRAINPERF_BISECT_BUDGET_S:-1200}" || echo "nightly: the bisection did not name every culprit" >&2
    python -m trainperf.cli.main report "$run_doc" -o "$out/report" >/dev/null ||
      echo "nightly: the report was not written again with the culprits" >&2
  else
    echo "nightly: no green night kept in $last_green: nothing to bisect from" >&2
  fi
elif [ "$status" -eq 0 ]; then
  mkdir -p "$(dirname "$last_green")" && git rev-parse HEAD >"$last_green" 2>/dev/null
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/report/run.json" ]; then  # a job summary never fails the job
  python -m trainperf.cli.main summary "$out/report/run.json" >>"$GITHUB_STEP_SUMMARY" ||
    echo "nightly: no job summary written; the report is in $out/report" >&2
fi
if [ "$status" -eq 5 ]; then
  echo "nightly: no test ran" >&2
  exit 1
fi
exit "$status"
