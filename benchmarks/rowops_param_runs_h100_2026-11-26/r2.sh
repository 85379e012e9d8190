source .gpu/setup.sh
T0=$SECONDS
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py tests/test_plan_rowops.py tests/test_fastpath_rows.py > $OUT/t1.log 2>&1
echo "row tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/t1.log | head -20
bash .gpu/trees.sh r2 ".gpu/head ." 2 --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16 --shapes 64x4194304,1x268435456,4096x65536 --batches 3 --no-compile
