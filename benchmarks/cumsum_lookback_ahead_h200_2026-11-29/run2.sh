source .gpu/setup.sh
t0=$SECONDS
python3 -c "import torch; x=torch.empty(2**28,device='cuda'); y=torch.empty_like(x); import time
for i in range(3): y.copy_(x)
torch.cuda.synchronize(); t=time.perf_counter()
for i in range(20): y.copy_(x)
torch.cuda.synchronize(); print('copy GB/s', 2*x.numel()*4*20/(time.perf_counter()-t)/1e9)"
for dt in float32 float16; do
  for cfg in "0 0 0 -1" "128 0.375 8 -1" "128 0.25 8 -1" "128 0.1875 8 -1" "64 0.1875 16 -1" "64 0.25 16 -1" "256 0.5 4 -1" "256 0.375 4 -1" "128 0.375 8 0" "128 0.375 8 40" "128 0.375 8 300"; do
    timeout 60 python3 .gpu/lbsweep.py $dt $cfg 2>&1 | tail -1
  done
  echo "t=$((SECONDS-t0))"
done
