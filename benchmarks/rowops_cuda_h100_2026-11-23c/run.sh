#!/bin/bash
# GPU run for rowk (issue 10): CUDA row-op parity tests, then cumsum and long-row benchmarks,
# old tree (main 6fd13d2) and new tree interleaved.
export PYTHONUNBUFFERED=1
G=$(cd "$(dirname "$0")" && pwd)
T0=$SECONDS
cd $G/src && source diag/setup.sh
nvidia-smi --query-gpu=name,memory.total --format=csv > $OUT/gpu.txt 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_cuda_rowops.py > $OUT/tests.log 2>&1
echo "tests rc $? after $((SECONDS - T0)) s" >> $OUT/tests.log
tail -4 $OUT/tests.log
SCAN="--ops cumsum --dtypes float32,float16 --shapes 65536x4096,4096x65536,1x268435456 --batches 5 --no-compile"
ROWS="--ops softmax,rms_norm,layer_norm --dtypes float32,float16 --shapes 4096x65536,64x4194304,1x268435456 --batches 5 --no-compile"
for what in SCAN ROWS; do
  for tree in old src; do
    (cd $G/$tree && PYTHONPATH=/tmp/site:$G/$tree timeout 90 python3 tools/bench_rowops.py --backend cuda ${!what} \
        --json $OUT/${what,,}_$tree.json > $OUT/${what,,}_$tree.log 2>&1; echo "rc $?" >> $OUT/${what,,}_$tree.log)
    echo "$what $tree done after $((SECONDS - T0)) s"
    (( SECONDS - T0 > 300 )) && break 2
  done
done
