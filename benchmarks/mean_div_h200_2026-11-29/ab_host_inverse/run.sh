source .gpu/setup.sh
mkdir -p $OUT /tmp/t_inv /tmp/t_inv1 && tar -x -C /tmp/t_inv -f .gpu/t_inv.tar && tar -x -C /tmp/t_inv1 -f .gpu/t_inv1.tar
S=16777216x16,1048576x32,442368x128,2097152x8,4194304x4,33554432x2,8192x1000
for round in 1 2; do
  for r in cur inv inv1; do
    if [ $r = cur ]; then d=$PWD; else d=/tmp/t_$r; fi
    (cd $d && timeout 150 python3 tools/bench_cuda.py --ops mean,sum --dtypes float32,float16,float64 --shapes $S --json $OUT/m_${r}_$round.json 2>&1 | grep -v Warn | grep -c mean)
  done
done
cd /tmp/t_inv1 && python3 -m pytest -q -x -p no:cacheprovider tests/test_accuracy.py -k "cuda_means_of_exact or cuda_sums_past" 2>&1 | tail -3
