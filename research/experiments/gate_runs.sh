#!/usr/bin/env bash
# On a GPU machine: record the two user-written examples (examples/test_denoiser.py,
# examples/test_text_classifier.py) into a copy of the committed baselines, then run them strict against
# it, unchanged (aaN) or with a regression injected (spinN, opsN, syncN: inject_regression.py).
#   RUNS="aa1 spin1 ops1 sync1" bash research/experiments/gate_runs.sh   (no RECORD=0: record first)
# Without RECORD=0 the examples are recorded afresh; with it, they are judged against .trust/bl/nvidia-h200.json
# (a copy of the committed file where none is there yet; record_runs.sh records into it too).
# FILES="NODE..." judges those test files or node ids instead of the examples (FILES=suite: the suite's
# cases with counter-2 work); RUN_S (default 150) is each run's stop. UNTIL=SECONDS ends the runs by then
# (counted from the script's start): a run starts only with more than MIN_RUN_S (60) left and stops at
# UNTIL. The runs' packed reports are appended to $OUT/runs.tar.
set -u
files=${FILES:-"examples/test_denoiser.py examples/test_text_classifier.py"}
# the suite's cases recorded with the second counter (digits/channels_last is not: the injection, sized
# by the recorded work, cannot run on it)
if [ "$files" = suite ]; then
  d=perf_tests/test_digits.py::test_digits
  files="$d[reference] $d[dataloader_workers] $d[pinned_nonblocking] $d[amp_bf16]
    perf_tests/test_gpt2.py::test_gpt2[reference] perf_tests/test_gpt2.py::test_gpt2[amp_bf16]
    perf_tests/test_gpt2.py::test_gpt2[compile] perf_tests/test_bert.py::test_bert[reference]
    perf_tests/test_bert.py::test_bert[amp_bf16] perf_tests/test_resnet.py::test_resnet[reference]
    perf_tests/test_gpt2_memory.py::test_gpt2_memory[reference]"
fi
run_s=${RUN_S:-150}
mkdir -p .trust/bl
[ -e .trust/bl/nvidia-h200.json ] || cp baselines/nvidia-h200.json .trust/bl/
if [ "${RECORD:-1}" = 1 ]; then
  echo "== rec $(date -u +%T)"
  STOP_AFTER=300 bash ci/device_pytest.sh rec $files --baseline-dir=.trust/bl --update-baselines -q
  cp .trust/bl/nvidia-h200.json "$OUT/"
fi
for name in ${RUNS:-aa1 spin1 ops1 sync1}; do
  if [ -n "${UNTIL:-}" ]; then  # a call's end: no run starts in its last MIN_RUN_S, each stops at it
    left=$((UNTIL - SECONDS))
    [ "$left" -gt "${MIN_RUN_S:-60}" ] || { echo "== $name not started: $left s left"; break; }
    run_s=$left
  fi
  kind=${name%%[0-9]*}
  echo "== $name $(date -u +%T)"
  if [ "$kind" = aa ]; then
    STOP_AFTER=$run_s bash ci/device_pytest.sh "$name" $files --baseline-dir=.trust/bl --perf-strict -q -rs
  else
    INJECT=$kind INJECT_BASELINES=$PWD/.trust/bl/nvidia-h200.json PYTHONPATH=$PWD/research/experiments${PYTHONPATH:+:$PYTHONPATH} \
      PYTEST_ADDOPTS="-p inject_regression" STOP_AFTER=$run_s \
      bash ci/device_pytest.sh "$name" $files --baseline-dir=.trust/bl --perf-strict -q -rs
  fi
  # one file for all runs: a device call hands back only a few files
  tar -rf "$OUT/runs.tar" -C "$OUT" "$name.tar.gz" && rm "$OUT/$name.tar.gz"
done
echo "== end $(date -u +%T)"
