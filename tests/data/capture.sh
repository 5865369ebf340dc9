#!/usr/bin/env bash
# How the files in tests/data were captured on the H100 machine (run from the repository root there;
# .devlibs carries libdw/libelf for the nsys importer). Output: $OUT/captures.tar.gz and logs.
# Before committing, the rows holding the target process's environment and working directory were
# deleted from the SQLite exports (StringIds, META_DATA_CAPTURE, TARGET_INFO_SYSTEM_ENV); kernels and NVTX
# ranges are untouched.
set -x
NSYS=${TRAINPERF_NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
NCU=${TRAINPERF_NCU:-/usr/local/cuda/bin/ncu}
export LD_LIBRARY_PATH=$PWD/.devlibs:$LD_LIBRARY_PATH PYTHONPATH=$PWD
C=/tmp/captures; rm -rf $C; mkdir -p $C
CHILD="-p no:cacheprovider -q -W ignore::DeprecationWarning --trainperf-child /tmp/child"
NSYS_ARGS="profile -t cuda,nvtx -s none --cpuctxsw=none --capture-range=cudaProfilerApi --capture-range-end=stop -f true"
METRICS=smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_hadd_pred_on.sum,smsp__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum,smsp__sass_thread_inst_executed_op_dadd_pred_on.sum,smsp__sass_thread_inst_executed_op_dmul_pred_on.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum
NCU_ARGS="--clock-control none --profile-from-start off --section SpeedOfLight --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart --metrics $METRICS -f"
for node in "perf_tests/test_gpt2.py::test_gpt2[stack]" "perf_tests/test_digits.py::test_digits[amp_bf16]"; do
  name=$(echo "$node" | sed 's/.*\[\(.*\)\]/\1/'); name=$(basename "${node%%.py*}")_$name
  python3 -m pytest "$node" $CHILD --trainperf-child-torch && cp /tmp/child/trace.json $C/$name.trace.json
  $NSYS $NSYS_ARGS -o $C/$name python3 -m pytest "$node" $CHILD
  $NSYS export --type sqlite -f true -o $C/$name.sqlite $C/$name.nsys-rep
  $NSYS stats --report cuda_gpu_kern_sum --format csv -o $C/$name $C/$name.nsys-rep
done
$NSYS $NSYS_ARGS -o $C/truth python3 research/experiments/truth_kernels.py && $NSYS export --type sqlite -f true -o $C/truth.sqlite $C/truth.nsys-rep
$NCU $NCU_ARGS -o $C/truth python3 research/experiments/truth_kernels.py && $NCU -i $C/truth.ncu-rep --csv --page raw > $C/truth.ncu.csv
$NCU $NCU_ARGS --launch-count 12 -o $C/digits_amp_bf16 python3 -m pytest "perf_tests/test_digits.py::test_digits[amp_bf16]" $CHILD
$NCU -i $C/digits_amp_bf16.ncu-rep --csv --page raw > $C/digits_amp_bf16.ncu.csv
$NCU --version > $C/ncu.version; $NSYS --version > $C/nsys.version
cp /opt/nvidia/nsight-compute/2025.3.1/sections/SpeedOfLight*Roofline*.section $C/
ls -la $C; tar -czf $OUT/captures.tar.gz -C /tmp captures
# gpt2_stack.ncu.csv comes from the wired plugin itself, when it still asked ncu for mangled names (these
# kernels' mangled names are their function names): the case folder's ncu.csv of
#   ci/device_pytest.sh gpt2_stack_ncu "perf_tests/test_gpt2.py::test_gpt2[stack]" --profile=ncu
# gpt2_reference.* and gpt2_amp_bf16.*: the test process's trace.json (gzipped) and the case folder's ncu.csv of
#   ci/device_pytest.sh gpt2_a perf_tests/test_gpt2.py --profile=ncu -k "reference or tf32 or amp_bf16"
# (amp_bf16's from a later run, after launch__registers_per_thread joined the metrics).
# h200_*_gemm.{sections,hierarchical}.ncu.csv: one kernel of gpt2/reference and of bert/amp_bf16 profiled
# twice on one H200, with the three sections and with the hierarchical one and ncu.METRICS alone:
#   research/studies/ncu_child_cost.sh (at commit 8f6de94) NODE KERNEL_FUNCTION_NAME   (its sections.csv and hierarchical.csv)
