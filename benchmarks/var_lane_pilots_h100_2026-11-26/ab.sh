source .gpu/setup.sh
T0=$SECONDS; R0=$PWD
ARGS="--ops var,std --dtypes float32,float16 --shapes 1048576x32,442368x128,16777216x16 --batches 5 --rotate-bytes 268435456"
for round in 1 2; do
  for tree in d81 new; do
    if [ $tree = new ]; then R=$R0; else R=$R0/.gpu/$tree; fi
    (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 200 python3 $R/tools/bench_cuda.py $ARGS --json $OUT/${tree}_$round.json > $OUT/${tree}_$round.txt 2>&1); echo "$tree $round rc $? at $((SECONDS-T0))"
  done
done
(cd /tmp && PYTHONPATH=/tmp/site:$R0 python3 $R0/tools/bench_cuda.py --compare $OUT/d81_1.json $OUT/new_1.json > $OUT/cmp1.txt 2>&1; PYTHONPATH=/tmp/site:$R0 python3 $R0/tools/bench_cuda.py --compare $OUT/d81_2.json $OUT/new_2.json > $OUT/cmp2.txt 2>&1)
cat $OUT/cmp1.txt $OUT/cmp2.txt | tail -40; tail -3 $OUT/d81_1.txt
rm -f $OUT/*_[12].txt
