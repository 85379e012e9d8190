# cumsum and logcumsumexp on every DESIGN.md shape, float32 and float16, on the H200 (CUDA
# backend, public call on torch tensors, torch eager and the copy beside; torch.compile left out
# to fit the session's device time). From the repository root on the GPU machine after
# .gpu/setup.sh's wheels.
source .gpu/setup.sh
mkdir -p $OUT
for op in cumsum logcumsumexp; do
  timeout 280 python3 tools/bench_rowops.py --backend cuda --ops $op --dtypes float32,float16 --no-compile \
      --batches 3 --json $OUT/$op.json 2>&1 | grep -v Warn | tee $OUT/$op.txt
done
