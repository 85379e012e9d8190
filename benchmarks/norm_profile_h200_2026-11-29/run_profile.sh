# norm kernels under ncu on the H200: each pass's DRAM throughput, issue rate and time (run
# from the repository root on the GPU machine after .gpu/setup.sh's wheels are in place)
source .gpu/setup.sh
D=benchmarks/norm_profile_h200_2026-11-29
M=launch__grid_size,launch__block_size,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks
for cfg in "rms_norm float16 1 268435456" "rms_norm float32 1 268435456" "rms_norm float32 65536 4096" "layer_norm float16 16777216 16"; do
  echo "== $cfg"
  timeout 150 ncu --clock-control none -k regex:norm_rows --launch-skip 3 --launch-count 3 --csv --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio python3 $D/prof.py $cfg 2>/dev/null | python3 $D/ncu_all.py
done
echo "== torch.compile rms_norm float16 1 268435456 (inductor's kernels)"
cat > /tmp/tc.py <<'PY'
import torch
x = torch.randn((1, 268435456), device="cuda").half()
f = torch.compile(lambda t: torch.nn.functional.rms_norm(t, (t.shape[-1],), eps=1e-6))
for _ in range(4):
    y = f(x)
torch.cuda.synchronize()
PY
timeout 200 ncu --clock-control none -k regex:triton --launch-skip 4 --launch-count 4 --csv --metrics $M python3 /tmp/tc.py 2>/dev/null | python3 $D/ncu_all.py
