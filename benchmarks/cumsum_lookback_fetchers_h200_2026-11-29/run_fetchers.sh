source .gpu/setup.sh
t0=$SECONDS
for dt in float32 float16; do
  for cfg in "0 0 0 -1" "0 0 0 -1 LB_FETCHERS=1" "256 0.5 4 -1" "256 0.375 4 -1" "256 0.5 4 -1 LB_FETCHERS=1" "128 0.25 8 -1" "64 0.375 8 -1"; do
    timeout 60 python3 benchmarks/cumsum_lookback_ahead_h200_2026-11-29/lbsweep.py $dt $cfg 2>&1 | tail -1
  done
  echo "t=$((SECONDS-t0))"
done
timeout 300 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py 2>&1 | tail -5
echo "t=$((SECONDS-t0))"
timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_rowops.py -k "cumsum or cumprod or logcumsumexp or scan" 2>&1 | tail -3
echo "t=$((SECONDS-t0))"
