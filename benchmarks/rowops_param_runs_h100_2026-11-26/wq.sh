source .gpu/setup.sh
S=$PWD/.gpu/split.py
for round in 1 2; do
for tree in .gpu/head .gpu/v_wq .gpu/v_wu2; do
  root=$(cd $tree && pwd); echo "== $(basename $root) $round"
  (cd /tmp && PYTHONPATH=/tmp/site:$root timeout 100 python3 $S "64x4194304|-;1x268435456|-;4096x65536|-" softmax,rms_norm,layer_norm float16,float32 2>&1 | grep -v -i warn) | tee $OUT/wq_$(basename $root)_$round.txt
done; done
