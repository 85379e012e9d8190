source .gpu/setup.sh
t0=$SECONDS
for r in 1 2; do
 for e in "" w wt; do
  CLREDUCE_EXP_BACK=$e PYTHONPATH=/tmp/site:$PWD XDG_CACHE_HOME=/tmp/xb timeout 250 python3 tools/bench_rowops.py --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float32,float16 --shapes 4096x65536,8192x32768,64x4194304,1x268435456 --no-compile --batches 3 --json $OUT/back_${e:-0}_$r.json > $OUT/back_${e:-0}_$r.txt 2>&1
  echo "== back=${e:-none} round $r rc $? at $((SECONDS-t0))s"
 done
done
