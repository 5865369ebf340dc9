#!/usr/bin/env bash
# The research's own tests (its studies' parsers and tables), apart from the product's: a failure here
# says a study script no longer reads what the product writes, and fails no product build.
#   ci/research.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -p no:hypothesispytest -p no:anyio" pytest research/tests -n 2
