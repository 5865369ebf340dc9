#!/usr/bin/env bash
# ncu with each line of its output (and of the child it runs) stamped with the seconds since it started;
# the --version probe and --import runs go through untouched. For a `--profile=ncu` session:
#   TRAINPERF_NCU=$PWD/research/studies/ncu_stamped.sh pytest ... --profile=ncu   (REAL_NCU: the ncu to run)
real=${REAL_NCU:-/usr/local/cuda/bin/ncu}
if [[ " $* " == *" --version "* || " $* " == *" --import "* ]]; then exec "$real" "$@"; fi
start=${EPOCHREALTIME/./}
"$real" "$@" 2>&1 | while IFS= read -r line; do
  printf '%7.2f %s\n' "$(( (${EPOCHREALTIME/./} - start) / 10000 ))e-2" "$line"
done
status=${PIPESTATUS[0]}
printf '%7.2f exit %s\n' "$(( (${EPOCHREALTIME/./} - start) / 10000 ))e-2" "$status"
exit "$status"
