#!/bin/bash
# final GPU check of merged main, part B (row ops, fast paths, NVIDIA OpenCL) and the row-op
# benchmark of this session's float16-weight change: HEAD (src) against 459b84d (../before)
cd "$(dirname "$0")" && source diag/setup.sh
T0=$SECONDS
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -p no:benchmark -rf --tb=line tests/test_cuda_rowops.py tests/test_fastpath.py tests/test_fastpath_rows.py tests/test_nvidia_opencl.py tests/test_rowops.py -k "cuda or nvidia or fast or pooled" > $OUT/parityB.log 2>&1
echo "parity B rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR" $OUT/parityB.log | head -30
ARGS="--backend cuda --ops rms_norm,layer_norm,softmax --dtypes float16 --shapes 8192x1000,648720x128 --batches 5 --no-compile"
for round in 1 2; do
  for tree in before src; do
    if [ $tree = before ]; then P=/tmp/site:$PWD/../before; else P=/tmp/site:$PWD; fi
    (cd /tmp && PYTHONPATH=$P timeout 120 python3 $OLDPWD/$( [ $tree = before ] && echo ../before || echo . )/tools/bench_rowops.py $ARGS --json $OUT/rows_${tree}_$round.json > $OUT/rows_${tree}_$round.txt 2>&1)
    echo "bench $tree round $round rc $? at $((SECONDS-T0)) s"
  done
done
tail -12 $OUT/rows_before_2.txt $OUT/rows_src_2.txt
