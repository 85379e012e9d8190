source .gpu/setup.sh > /dev/null
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
mkdir -p $OUT/sv
(PYTHONPATH=/tmp/site:$PWD/.gpu/sv/X timeout 250 python3 -m pytest -q -x -p no:cacheprovider tests/test_cuda_rowops.py -k "scan or cumsum or cumprod or past" 2>&1 | tail -4) &
tp=$!
wait $tp
S1="--backend cuda --ops cumsum --dtypes float32 --shapes 1048576x32,262144x128,16384x1024 --no-compile --batches 3"
S2="--backend cuda --ops cumprod --dtypes float32,float64 --shapes 1048576x32,16384x1024 --no-compile --batches 3"
for round in 1 2; do
  for v in base X Y; do
    root=$PWD/.gpu/sv/$v
    for s in 1 2; do
      eval S=\$S$s
      (cd /tmp && PYTHONPATH="/tmp/site:$root" timeout 200 python3 "$root/tools/bench_rowops.py" $S --json $OUT/sv/${v}_${round}_$s.json > $OUT/sv/${v}_${round}_$s.txt 2>&1)
      echo "== $v $round $s rc $?"; grep -E "^cum" $OUT/sv/${v}_${round}_$s.txt | cut -c1-75
    done
  done
done
cd $OUT && tar czf sv2.tgz sv && rm -rf sv
