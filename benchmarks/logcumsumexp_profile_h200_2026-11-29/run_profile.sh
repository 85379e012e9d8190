# logcumsumexp kernels under ncu on the H200: where their cycles go (run from the repo root
# on the GPU machine after .gpu/setup.sh's wheels are in place)
source .gpu/setup.sh
D=benchmarks/logcumsumexp_profile_h200_2026-11-29
M=launch__grid_size,launch__block_size,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio
for cfg in "logcumsumexp float32 1 268435456" "logcumsumexp float32 4096 4096" "logcumsumexp float16 1 268435456" "cumsum float32 4096 4096"; do
  echo "== $cfg"
  timeout 200 ncu --clock-control none -k regex:scan_rows --launch-skip 2 --launch-count 4 --csv --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio python3 $D/prof.py $cfg 2>/dev/null | python3 benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/ncu_pick.py
done
echo "== torch logcumsumexp float32 1 268435456"
timeout 200 ncu --clock-control none --launch-skip 0 --launch-count 12 --csv --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio python3 $D/prof_torch.py float32 1 268435456 2>/dev/null | python3 benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/ncu_pick.py
