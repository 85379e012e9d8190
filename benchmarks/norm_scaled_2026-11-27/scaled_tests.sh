source .gpu/setup.sh
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
mkdir -p /tmp/res
timeout 420 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py tests/test_fastpath_rows.py > /tmp/res/gpu_tests.txt 2>&1; echo "tests rc $?"
grep -E "FAILED|passed|failed" /tmp/res/gpu_tests.txt | tail -15
cp /tmp/res/gpu_tests.txt $OUT/
