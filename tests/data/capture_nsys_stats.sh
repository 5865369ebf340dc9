#!/usr/bin/env bash
# How the nsys stats captures in tests/data were made on the H200 machine (run from the repository root
# there, .devlibs carried): each node's marked iteration under `nsys profile` as the plugin starts it,
# then its SQLite export and the `nsys stats` reports the plugin reads, from the same report.
# Output: $OUT/nsys_stats.tar.gz; its files are in tests/data with an h200_ prefix. Before committing,
# the rows holding the target's environment, command line and paths were deleted from the SQLite exports
# (TARGET_INFO_SYSTEM_ENV, META_DATA_CAPTURE, META_DATA_EXPORT, ANALYSIS_FILE, DIAGNOSTIC_EVENT and the
# StringIds holding paths); kernels and NVTX ranges are untouched.
set -x
NSYS=${TRAINPERF_NSYS:-$(ls -d /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys | sort | tail -1)}
export LD_LIBRARY_PATH=$PWD/.devlibs:$LD_LIBRARY_PATH PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
C=/tmp/nsys_stats; rm -rf $C; mkdir -p $C
CHILD="-p no:cacheprovider -q -W ignore::DeprecationWarning --trainperf-child /tmp/child"
NSYS_ARGS="profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi
  --capture-range-end=stop --cuda-graph-trace=node --force-overwrite=true"
REPORTS=cuda_kern_exec_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,nvtx_kern_sum
$NSYS --version > $C/nsys.version
$NSYS stats --help-reports > $C/help-reports.txt 2>&1
for node in "perf_tests/test_digits.py::test_digits[amp_bf16]" "perf_tests/test_gpt2.py::test_gpt2[cuda_graphs]"; do
  name=$(basename "${node%%.py*}")_$(echo "$node" | sed 's/.*\[\(.*\)\]/\1/'); name=${name#test_}
  timeout 150 $NSYS $NSYS_ARGS -o $C/$name python3 -m pytest "$node" $CHILD
  $NSYS export --type sqlite --force-overwrite=true -o $C/$name.sqlite $C/$name.nsys-rep
  $NSYS stats --report $REPORTS --format csv --force-export=false --output $C/$name $C/$name.nsys-rep
done
rm -f $C/*.nsys-rep
ls -la $C; tar -czf $OUT/nsys_stats.tar.gz -C /tmp nsys_stats
