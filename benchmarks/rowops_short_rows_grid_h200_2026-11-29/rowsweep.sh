source .gpu/setup.sh
for round in 1 2; do
for cfg in "0 0" "1024 0" "16 0" "0 128" "0 512" "1024 512"; do
  timeout 60 python3 benchmarks/rowops_short_rows_grid_h200_2026-11-29/rowsweep.py softmax float16 16777216 16 $cfg 2>&1 | tail -1
done
done
for cfg in "0 0" "1024 0" "0 512" "1024 512"; do
  timeout 60 python3 benchmarks/rowops_short_rows_grid_h200_2026-11-29/rowsweep.py rms_norm float16 16777216 16 $cfg 2>&1 | tail -1
  timeout 60 python3 benchmarks/rowops_short_rows_grid_h200_2026-11-29/rowsweep.py layer_norm float32 4194304 64 $cfg 2>&1 | tail -1
done
