mkdir -p /tmp/nv && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/nv/nvidia.icd
source .gpu/setup.sh
export OCL_ICD_VENDORS=/tmp/nv CLREDUCE_REQUIRE_DEVICES=nvidia
t0=$SECONDS
timeout 430 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_nvidia_opencl.py tests/test_kernel_variants.py tests/test_api.py tests/test_numpy_rules.py tests/test_tuning.py tests/test_rowops.py tests/test_bad_input.py tests/test_accuracy.py 2>&1 | tail -15
echo "t=$((SECONDS-t0))"
