source .gpu/setup.sh
mkdir -p $OUT
for r in 295165a 534b70b 0123f78; do mkdir -p /tmp/t_$r && tar -x -C /tmp/t_$r -f .gpu/t_$r.tar && mkdir -p /tmp/t_$r/tools && cp tools/bench_cuda.py /tmp/t_$r/tools/; done
for round in 1 2; do
  for r in 295165a 534b70b 0123f78 head; do
    if [ $r = head ]; then d=$PWD; else d=/tmp/t_$r; fi
    (cd $d && timeout 200 python3 tools/bench_cuda.py --ops mean,sum,max --dtypes float32,float16 --shapes 16777216x16,4194304x64,1048576x32 --json $OUT/k_${r}_$round.json 2>&1 | grep -v Warn | tail -3)
  done
done
