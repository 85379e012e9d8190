source .gpu/setup.sh
T0=$SECONDS
ARGS="--backend cuda --ops cumsum --dtypes float32,float16 --shapes 1x268435456,64x4194304,4096x65536,65536x4096 --batches 5 --no-compile"
for round in 1 2; do
for tree in base new; do
  if [ $tree = base ]; then R=$PWD/.gpu/base; else R=$PWD; fi
  (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 150 python3 $R/tools/bench_rowops.py $ARGS --json $OUT/cumsum_${tree}_$round.json > $OUT/cumsum_${tree}_$round.txt 2>&1)
  echo "bench $tree $round rc $? at $((SECONDS-T0)) s"; tail -8 $OUT/cumsum_${tree}_$round.txt
done
done
echo "== var A/B vs d81e80a"; (bash .gpu/varab.sh 2>&1 | grep -E "float16 \| 442368|float32 \| 1048576|Slowest") ; echo "var ab at $((SECONDS-T0)) s"
