source .gpu/setup.sh > /dev/null
export PYTHONPATH=/tmp/site:$PWD XDG_CACHE_HOME=/tmp/xc
R=$PWD
mkdir -p $OUT/sides
echo "== CUDA tests"
timeout 280 python3 -m pytest -p no:cacheprovider -n 8 -q tests/test_accuracy.py -k "cuda and (chunks or past or accurate)" 2>&1 | grep -E "FAILED|passed|failed|rror" | tail -6
S="--ops sum,mean --shapes 64x4194304,1x268435456,4096x65536 --dtypes float32,float16 --batches 5"
for round in 1 2; do
  for v in base new; do
    if [ $v = base ]; then root=$R/.gpu/sv/base2; else root=$R; fi
    (cd /tmp && PYTHONPATH="/tmp/site:$root" timeout 200 python3 $root/tools/bench_cuda.py $S --json $OUT/sides/${v}_$round.json > $OUT/sides/${v}_$round.txt 2>&1)
    echo "== $v $round rc $?"; tail -n 14 $OUT/sides/${v}_$round.txt
  done
done
python3 tools/bench_cuda.py --compare $OUT/sides/base_2.json $OUT/sides/new_2.json 2>&1 | tail -15
cd $OUT && tar czf sides.tgz sides && rm -rf sides
