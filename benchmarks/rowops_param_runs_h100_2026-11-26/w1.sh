source .gpu/setup.sh
T0=$SECONDS; R=$PWD
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py tests/test_plan_rowops.py tests/test_fastpath_rows.py > $OUT/t1.log 2>&1
echo "row tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/t1.log | head -20
bash .gpu/trees.sh w1 ".gpu/c91 ." 2 --backend cuda --ops softmax,log_softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 64x4194304 --batches 3 --no-compile
echo "ab at $((SECONDS-T0)) s"
(cd /tmp && PYTHONPATH=/tmp/site:$R timeout 290 python3 $R/tools/bench_rowops.py --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 64x4194304 --batches 3 --json $OUT/w1_compile.json 2>&1 | grep -v -i "warn\|online softmax\|split the reduction\|important use case\|^$")
echo "done at $((SECONDS-T0)) s"
