#!/bin/bash
# three trees' softmax cells alternating: base (head4), exA (.cs stores), exB (.cs stores + .cs write-walk loads)
source .gpu/setup.sh
root=$PWD/.gpu/sv
for round in 1 2; do
  for t in head4 exA exB; do
    echo "== $t round $round"
    (cd /tmp && PYTHONPATH=/tmp/site:$root/$t timeout 150 python3 $root/$t/tools/bench_rowops.py --backend cuda --ops softmax,log_softmax \
      --dtypes float32,float16 --shapes 4096x65536,64x4194304,1x268435456,65536x4096,648720x128 --no-compile --batches 3 2>/dev/null | grep -E "^(softmax|log_softmax)") | tee $OUT/${t}_$round.txt
  done
done
