source .gpu/setup.sh
t0=$SECONDS
for dt in float32 float16; do
  for cfg in "0 0 0 -1" "0 0 0 -1 SG_MODE=2" "0 0 0 -1" "0 0 0 -1 SG_MODE=2"; do
    timeout 60 python3 benchmarks/cumsum_lookback_ahead_h200_2026-11-29/lbsweep.py $dt $cfg 2>&1 | tail -1
  done
  echo "t=$((SECONDS-t0))"
done
