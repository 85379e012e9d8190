mkdir -p /tmp/nv && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/nv/nvidia.icd
source .gpu/setup.sh
export OCL_ICD_VENDORS=/tmp/nv
t0=$SECONDS
timeout 100 python3 -m pytest -q -p no:cacheprovider "tests/test_bad_input.py::test_forcing_subgroup_modes_without_subgroups" "tests/test_rowops.py::test_row_variants_that_fail_to_build_fall_back" 2>&1 | tail -2
echo "t=$((SECONDS-t0))"
mkdir -p $OUT
timeout 420 python3 tools/bench_nvidia_opencl.py --ops mean,max,argmax --dtypes float32,float16 \
  --shapes 442368x128,16777216x16,8192x1000,65536x4096,64x4194304 --batches 3 --rotate-bytes 268435456 \
  --json $OUT/nvidia_opencl_h200.json 2>&1 | grep -v Warn | tee $OUT/nvidia_opencl_h200.txt | tail -40
echo "t=$((SECONDS-t0))"
