source .gpu/setup.sh > /dev/null
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
S="--backend cuda --ops cumsum --dtypes float32 --shapes 1048576x32,262144x128,16384x1024,4096x65536 --no-compile --batches 3"
mkdir -p $OUT/sv
for round in 1 2; do
  for v in base norescue nowalk nobig; do
    root=$PWD/.gpu/sv/$v
    (cd /tmp && PYTHONPATH="/tmp/site:$root" timeout 200 python3 "$root/tools/bench_rowops.py" $S --json $OUT/sv/${v}_$round.json > $OUT/sv/${v}_$round.txt 2>&1)
    echo "== $v $round rc $?"; grep -E "^cumsum" $OUT/sv/${v}_$round.txt
  done
done
cd $OUT && tar czf sv.tgz sv && rm -rf sv
