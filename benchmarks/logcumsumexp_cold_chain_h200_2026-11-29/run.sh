source .gpu/setup.sh
t0=$SECONDS
mkdir -p $OUT
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head lcse --backend cuda --ops logcumsumexp --dtypes float32,float16 --shapes 1x268435456,64x4194304,4096x4096 --no-compile --batches 3 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
timeout 330 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda.py tests/test_cuda_rowops.py tests/test_fastpath.py tests/test_fastpath_rows.py tests/test_device_arrays.py tests/test_rowops.py 2>&1 | tail -4
echo "t=$((SECONDS-t0))"
