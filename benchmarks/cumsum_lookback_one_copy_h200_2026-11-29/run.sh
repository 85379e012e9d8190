source .gpu/setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for round in ${ROUNDS:-1}; do
for shape in "cumsum float32 1 268435456" "cumsum float16 1 268435456" "cumsum float32 64 4194304" "logcumsumexp float32 1 268435456"; do
  for cfg in base one:0.5 one:0.625 one:0.625:2; do
    timeout 120 python3 .gpu/lb1.py $shape $cfg 2>&1 | tail -1
  done
done
done
# smaller look-back rows and unaligned rows: hashes must match base
for shape in "cumsum float32 3 5000001" "cumsum float16 7 1000003" "cumprod float32 2 3000000"; do
  for cfg in base one:0.625 one:0.625:2; do
    timeout 120 python3 .gpu/lb1.py $shape $cfg 2>&1 | tail -1
  done
done
