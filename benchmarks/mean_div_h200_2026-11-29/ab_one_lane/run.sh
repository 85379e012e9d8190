source .gpu/setup.sh
mkdir -p $OUT /tmp/t_v2 && tar -x -C /tmp/t_v2 -f .gpu/t_v2.tar
S=2097152x8,4194304x4,16777216x16,1048576x32,33554432x2
for round in 1 2; do
  for r in new v2; do
    if [ $r = new ]; then d=$PWD; else d=/tmp/t_v2; fi
    (cd $d && timeout 200 python3 tools/bench_cuda.py --ops mean,sum --dtypes float32,float16,float64 --shapes $S --json $OUT/m_${r}_$round.json 2>&1 | grep -v Warn | grep mean)
  done
done
