source .gpu/setup.sh
T0=$SECONDS
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py -k "norm or adversarial or far_from_zero" > $OUT/t8.log 2>&1
echo "tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/t8.log | head -10
ARGS="--backend cuda --ops layer_norm --dtypes float16,float32 --shapes 65536x4096,16384x2048,648720x128,8192x1000 --batches 5 --no-compile"
for round in 1 2; do
for tree in base new; do
  if [ $tree = base ]; then R=$PWD/.gpu/base; else R=$PWD; fi
  (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 150 python3 $R/tools/bench_rowops.py $ARGS --json $OUT/ln2_${tree}_$round.json > $OUT/ln2_${tree}_$round.txt 2>&1)
  echo "bench $tree $round rc $? at $((SECONDS-T0)) s"; tail -8 $OUT/ln2_${tree}_$round.txt
done
done
