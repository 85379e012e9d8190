source .gpu/setup.sh
T0=$SECONDS
timeout 330 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py tests/test_fastpath_rows.py tests/test_cuda.py tests/test_nvidia_opencl.py > $OUT/tests.log 2>&1
echo "tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR|nvidia-gpu" $OUT/tests.log | head -20
ARGS="--backend cuda --ops cumsum --dtypes float32,float16 --shapes 1x268435456,64x4194304,4096x65536,65536x4096 --batches 5 --no-compile"
for round in 1 2; do
for tree in base new; do
  if [ $tree = base ]; then R=$PWD/.gpu/base; else R=$PWD; fi
  (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 200 python3 $R/tools/bench_rowops.py $ARGS --json $OUT/cumsum_${tree}_$round.json > $OUT/cumsum_${tree}_$round.txt 2>&1)
  echo "bench $tree $round rc $? at $((SECONDS-T0)) s"; tail -8 $OUT/cumsum_${tree}_$round.txt
done
done
tail -40 $OUT/tests.log > $OUT/tests_tail.log; rm -f $OUT/tests.log
