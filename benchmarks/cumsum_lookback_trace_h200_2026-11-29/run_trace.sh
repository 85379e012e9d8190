# from the repository root on the GPU machine, after .gpu/setup.sh (see ../cumsum_lookback_fetchers_h200_2026-11-29)
d=benchmarks/cumsum_lookback_trace_h200_2026-11-29
for dt in float32 float16; do
  CLREDUCE_FAST_PATH=0 timeout 90 python3 $d/lbtrace.py $dt 1 268435456 1
done
CLREDUCE_FAST_PATH=0 timeout 90 python3 $d/lbtrace.py float32 64 4194304 1
