source .gpu/setup.sh
S=$PWD/.gpu/split.py
for tree in . .gpu/c91; do
  root=$(cd $tree && pwd); echo "== $root"
  (cd /tmp && PYTHONPATH=/tmp/site:$root timeout 250 python3 $S "64x4194304|-|8|9|16|4;1x268435456|-|512|528|264|1056" softmax,rms_norm,layer_norm float16,float32 2>&1 | grep -v -i warn)
done
