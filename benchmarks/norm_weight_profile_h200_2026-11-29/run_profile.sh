# rms_norm float16 1 x 2**28 with a weight under ncu on the H200: our passes and inductor's
# kernels (run from the repository root on the GPU machine)
source .gpu/setup.sh
D=benchmarks/norm_weight_profile_h200_2026-11-29
P=benchmarks/norm_profile_h200_2026-11-29
M=launch__grid_size,launch__block_size,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,lts__t_sector_hit_rate.pct
echo "== clreduce"
timeout 150 ncu --clock-control none -k regex:norm_rows --launch-skip 3 --launch-count 3 --csv --metrics $M python3 $D/prof_w.py clreduce 2>/dev/null | python3 $P/ncu_all.py
echo "== torch.compile"
timeout 240 ncu --clock-control none -k regex:triton --launch-skip 4 --launch-count 4 --csv --metrics $M python3 $D/prof_w.py compile 2>/dev/null | python3 $P/ncu_all.py
