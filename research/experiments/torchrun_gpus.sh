#!/usr/bin/env bash
# The data-parallel file on one host's GPUs three ways: spawned by the plugin; through torchrun as two
# "nodes" of one GPU each (CUDA_VISIBLE_DEVICES=K); and two nodes again with rank 1 killed in its
# second case (tests/kill_rank.py) under --perf-timeout=$KILL_TIMEOUT; or (one_node) one torchrun
# of two processes that both see both GPUs. PARTS names the runs (default: spawned launched killed).
# Packs the logs and run documents into $OUT/NAME.tar.gz and prints each run's exit status and seconds.
#   research/experiments/torchrun_gpus.sh NAME [PYTEST_ARGS...]
set -uo pipefail
name=$1
shift
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
dir=${TRAINPERF_REPORTS:-/tmp/reports}/$name
mkdir -p "$dir"
common=(perf_tests/test_ddp.py -p no:cacheprovider -W ignore::DeprecationWarning -rs)

two_nodes() { # LABEL PYTEST_ARGS...: torchrun --nnodes=2 on this host, node K on GPU K
  local label=$1 port=$((20000 + RANDOM % 20000)) start=$SECONDS k
  shift
  local -a pids
  for k in 0 1; do
    CUDA_VISIBLE_DEVICES=$k timeout -k 30 "${LIMIT:-300}" python3 -m torch.distributed.run --nnodes=2 \
      --node-rank=$k --nproc-per-node=1 --rdzv-endpoint=127.0.0.1:$port -m pytest "${common[@]}" \
      --perf-report="$dir/$label" "$@" >"$dir/$label.node$k.log" 2>&1 &
    pids[k]=$!
  done
  wait "${pids[0]}"
  echo "$label node 0: exit $? at $((SECONDS - start)) s, ended $(date +%s.%N | cut -c1-12)"
  wait "${pids[1]}"
  echo "$label node 1: exit $? at $((SECONDS - start)) s"
}

parts=" ${PARTS:-spawned launched killed} "
start=$SECONDS
if [[ $parts == *" spawned "* ]]; then
  timeout -s INT -k 30 "${LIMIT:-300}" python3 -m pytest "${common[@]}" --perf-report="$dir/spawned" "$@" \
    >"$dir/spawned.log" 2>&1
  echo "spawned: exit $? at $((SECONDS - start)) s"
fi
[[ $parts == *" launched "* ]] && two_nodes launched "$@"
if [[ $parts == *" one_node "* ]]; then
  start=$SECONDS
  timeout -k 30 "${LIMIT:-300}" python3 -m torch.distributed.run --nproc-per-node=2 --standalone -m pytest \
    "${common[@]}" --perf-report="$dir/one_node" "$@" >"$dir/one_node.log" 2>&1
  echo "one_node: exit $? at $((SECONDS - start)) s"
fi
if [[ $parts == *" killed "* ]]; then
  export PYTHONPATH=$PWD/tests:$PYTHONPATH KILL_RANK_LOG=$dir/killed.at
  two_nodes killed -k "ddp_reference or bucket_cap or static_graph" --perf-timeout="${KILL_TIMEOUT:-60}" -p kill_rank
  echo "rank 1 killed at $(cat "$dir/killed.at" 2>/dev/null)"
fi
tar -czf "$OUT/$name.tar.gz" -C "$dir/.." --exclude='trace.json' --exclude='*.json.gz' "$name"
