#!/usr/bin/env bash
# The CPU pipeline: lint, types, the workflows' schema, the plugin's own tests (the slow end-to-end ones
# included), then the suite and the example workloads for real. The research's tests are not the
# product's: ci/research.sh runs them, apart.
# pytest's exit status 5 (no test collected) fails it.
#   ci/check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# one command a line: set -e does not stop at a failure inside an && list
ruff check .
ruff format --check .
mypy
check-jsonschema --builtin-schema vendor.github-workflows ci/*.yml

run_pytest() {
  local status=0
  pytest "$@" || status=$?
  if [ "$status" -eq 5 ]; then
    echo "pytest $*: no tests were collected" >&2
    exit 1
  fi
  return "$status"
}

# hypothesis's and anyio's pytest plugins cost each of the many pytest processes the tests start a
# fraction of a second at start, and none of them needs them (the @given tests run without hypothesis's;
# no test is async)
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -p no:hypothesispytest -p no:anyio"
# the slow end-to-end sessions too, once, on three xdist workers: the tests are CPU-bound processes started,
# and the toy cases they time step on one thread, so they share the two cores
# (research/evidence/cpu-timing-noise.md, research/evidence/cpu-ci-time.md)
run_pytest tests --run-slow -n 3
run_pytest perf_tests
run_pytest examples
