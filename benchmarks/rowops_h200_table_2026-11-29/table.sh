# usage: bash .gpu/table.sh "softmax log_softmax" SECONDS_EACH
source .gpu/setup.sh
mkdir -p $OUT
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.mem --format=csv,noheader
for op in $1; do
  timeout $2 python3 tools/bench_rowops.py --backend cuda --ops $op --dtypes float16,float32 --batches 3 \
      --json $OUT/$op.json 2>&1 | grep -v Warn | tee $OUT/$op.txt
  echo "t=$((SECONDS-t0)) after $op"
done
