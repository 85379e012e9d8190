source .gpu/setup.sh
t0=$SECONDS
M=launch__grid_size,launch__block_size,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__occupancy_limit_shared_mem,launch__registers_per_thread
for dt in float32 float16; do
timeout 200 ncu --clock-control none -k regex:scan_rows --launch-count 8 --csv --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio python3 benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/prof.py $dt 1 268435456 2>/dev/null | python3 benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/ncu_pick.py
done
echo "t=$((SECONDS-t0))"
for dt in float32 float16; do
  for cfg in "0 0 0 -1" "128 0.5 4 -1" "128 0.75 4 -1" "0 0 0 40" "64 0.5 8 -1" "0 0 0 -1"; do
    timeout 60 python3 benchmarks/cumsum_lookback_ahead_h200_2026-11-29/lbsweep.py $dt $cfg 2>&1 | tail -1
  done
  echo "t=$((SECONDS-t0))"
done
