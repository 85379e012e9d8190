#!/bin/bash
source .gpu/setup.sh
T0=$SECONDS
bench() { # tree tag args...
  local tree=$1 tag=$2; shift 2
  if [ $tree = new ]; then R=$PWD; else R=$PWD/.gpu/$tree; fi
  (cd /tmp && PYTHONPATH=/tmp/site:$R timeout 170 python3 $R/tools/bench_rowops.py --backend cuda --batches 5 --no-compile "$@" --json $OUT/${tag}.json > $OUT/${tag}.txt 2>&1)
  echo "bench $tag rc $? at $((SECONDS-T0)) s"
}
A="--ops softmax,log_softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 648720x128,65536x4096"
S="--ops absmax_scale --dtypes float16,float32 --shapes 648720x128,65536x4096"
for round in 1 2; do bench base b$round $A; bench new n$round $A; done
bench base sb $S; bench scalewide ss $S; bench new sn $S
timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py tests/test_fastpath_rows.py > $OUT/tests.log 2>&1
echo "tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/tests.log | head -20
cd $OUT; tar czf all.tgz *.txt *.json; rm -f *.json
for f in b1 n1 b2 n2 sb ss sn; do echo "== $f"; grep -v "^device\|^op" $f.txt | awk '{print $1,$2,$3,$4}'; done | paste -s -d' ' | sed 's/== /\n== /g'
