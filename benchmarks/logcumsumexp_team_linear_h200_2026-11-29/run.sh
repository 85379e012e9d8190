# logcumsumexp's run prefixes in the linear domain (row_scan.cl run_prefix) and the tile prefix
# folded into the runs' prefixes once a tile: main (.gpu/sv/head) against the working tree,
# alternating; the run_prefix-only tree (.gpu/sv/rp) once; ncu's instruction counts; the CUDA
# scan tests. From the repository root on the GPU machine after .gpu/setup.sh's wheels.
source .gpu/setup.sh
t0=$SECONDS
mkdir -p $OUT
S="--backend cuda --dtypes float32,float16 --no-compile --batches 3"
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head lcse --ops logcumsumexp --shapes 1x268435456,64x4194304,4096x4096 $S 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
(cd /tmp && PYTHONPATH=/tmp/site:$OLDPWD/.gpu/sv/rp timeout 200 python3 $OLDPWD/.gpu/sv/rp/tools/bench_rowops.py --ops logcumsumexp --shapes 1x268435456,64x4194304,4096x4096 $S --json $OUT/lcse_rp.json > $OUT/lcse_rp.txt 2>&1; tail -n +3 $OUT/lcse_rp.txt)
echo "t=$((SECONDS-t0))"
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head cumsum --ops cumsum --shapes 1x268435456,64x4194304 $S 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
M=gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,launch__registers_per_thread
for cfg in "logcumsumexp float32 1 268435456" "logcumsumexp float32 4096 4096"; do
  echo "== ncu $cfg"
  timeout 100 ncu --clock-control none -k regex:scan_rows --launch-skip 2 --launch-count 2 --csv --metrics $M python3 benchmarks/logcumsumexp_profile_h200_2026-11-29/prof.py $cfg 2>/dev/null | python3 benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/ncu_pick.py
done
echo "t=$((SECONDS-t0))"
timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py tests/test_rowops.py -k "scan or cumsum or cumprod or logcumsumexp" 2>&1 | tail -4
echo "t=$((SECONDS-t0))"
