# A/B of the row-op plans and kernels: .gpu/base (HEAD) against the working tree, public calls on torch tensors
source .gpu/setup.sh
T0=$SECONDS
ARGS="--backend cuda --ops softmax,log_softmax,rms_norm,layer_norm --dtypes float16 --shapes 648720x128,442368x128,1048576x32,8192x1000,65536x4096 --batches 5 --no-compile"
for round in 1 2; do
  for tree in base new; do
    if [ $tree = base ]; then R=$PWD/.gpu/base; else R=$PWD; fi
    (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 250 python3 $R/tools/bench_rowops.py $ARGS --json $OUT/rows_${tree}_$round.json > $OUT/rows_${tree}_$round.txt 2>&1)
    echo "bench $tree round $round rc $? at $((SECONDS-T0)) s"
  done
done
R=$PWD; (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 200 python3 $R/tools/bench_rowops.py --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16 --shapes 648720x128,65536x4096 --batches 5 --json $OUT/rows_compile.json > $OUT/rows_compile.txt 2>&1); echo "compile rc $? at $((SECONDS-T0)) s"
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py > $OUT/test_cuda_rowops.log 2>&1
echo "tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/test_cuda_rowops.log | head -20
tail -8 $OUT/rows_compile.txt
cat $OUT/test_cuda_rowops.log | tail -3 > $OUT/t.txt; rm -f $OUT/test_cuda_rowops.log $OUT/*.txt.bak
rm -f $OUT/rows_base_*.txt $OUT/rows_new_*.txt
