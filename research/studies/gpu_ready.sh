# Sourced by the scripts that time the suite over several calls of a GPU machine (record_suite.sh,
# strict_suite.sh), with $prog naming the script and $nothing what it leaves undone ("nothing recorded").
# Waits up to RECORD_GPU_WAIT_S (120) s for a GPU that ci/gpu_check.py finds fit for timing (no other
# process, no throttling: a killed session's child would time beside every case), else exits 6. Sets
# $slug to the GPU's baseline file name; with RECORD_DEVICE set to another name, exits 1.
waited=0
until python3 ci/gpu_check.py; do
  if ((waited >= ${RECORD_GPU_WAIT_S:-120})); then
    echo "$prog: the GPU is not fit for timing after $waited s (ci/gpu_check.py above): $nothing" >&2
    exit 6
  fi
  sleep 2
  waited=$((waited + 2))
done
slug=$(python3 -c 'import trainperf; print(trainperf.baseline_file(".", "cuda").stem)')
if [ -n "${RECORD_DEVICE:-}" ] && [ "$slug" != "$RECORD_DEVICE" ]; then
  echo "$prog: this machine's GPU is $slug, not $RECORD_DEVICE: $nothing" >&2
  exit 1
fi
