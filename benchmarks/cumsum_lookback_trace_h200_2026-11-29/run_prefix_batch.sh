source .gpu/setup.sh
L=benchmarks/cumsum_lookback_trace_h200_2026-11-29/lbtrace.py
for round in 1 2; do
for dt in float32 float16; do
  for cfg in "" "LB_PREFIX_BATCH=1" "LB_PREFIX_BATCH=1,SG_MODE=2"; do
    timeout 60 python3 $L $dt 1 268435456 0 "$cfg" 2>&1 | grep -v warm | tail -1
  done
done
done
for cfg in "" "LB_PREFIX_BATCH=1" "LB_PREFIX_BATCH=1,SG_MODE=2"; do
  timeout 60 python3 $L float32 64 4194304 0 "$cfg" 2>&1 | grep -v warm | tail -1
done
CLREDUCE_FAST_PATH=0 timeout 60 python3 $L float32 1 268435456 1 LB_PREFIX_BATCH=1 2>&1 | grep -v warm | tail -14
