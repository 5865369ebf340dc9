#!/usr/bin/env bash
# On a GPU machine: the runner against a plain loop of the same step (plain_loop.py), for the given
# nodes (six by default) measured one after the other in one pytest process (as a night runs them),
# then three of them alone, each in a fresh process (ALONE=0 skips those). Rows in $OUT/plain-loop.jsonl.
#   bash research/experiments/plain_loop_runs.sh [NODE...]
set -u
export PYTHONPATH=$PWD/research/experiments${PYTHONPATH:+:$PYTHONPATH} PYTEST_ADDOPTS="-p plain_loop"
export PLAIN_LOOP_OUT=$OUT/plain-loop.jsonl PLAIN_LOOP_ROUNDS=${PLAIN_LOOP_ROUNDS:-1}
mkdir -p /tmp/plain-bl
together=("perf_tests/test_gpt2.py::test_gpt2[reference]" "perf_tests/test_gpt2.py::test_gpt2[amp_bf16]"
  "examples/test_text_classifier.py::test_text_classifier[reference]"
  "examples/test_text_classifier.py::test_text_classifier[amp_bf16]"
  "examples/test_denoiser.py::test_denoiser[reference]" "examples/test_denoiser.py::test_denoiser[amp_bf16]")
[ "$#" -gt 0 ] && together=("$@")
echo "== together $(date -u +%T)"
STOP_AFTER=${STOP_AFTER:-300} bash ci/device_pytest.sh plain-together "${together[@]}" --baseline-dir=/tmp/plain-bl -q
if [ "${ALONE:-1}" = 1 ]; then
  for node in "${together[1]}" "${together[3]}" "${together[5]}"; do
    echo "== alone $node $(date -u +%T)"
    STOP_AFTER=120 bash ci/device_pytest.sh plain-alone "$node" --baseline-dir=/tmp/plain-bl -q
  done
fi
echo "== end $(date -u +%T)"
