#!/bin/bash
export PYTHONUNBUFFERED=1
G=$(cd "$(dirname "$0")" && pwd)
T0=$SECONDS
cd $G/src && source diag/setup.sh
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_cuda_rowops.py > $OUT/tests2.log 2>&1
echo "tests rc $? after $((SECONDS - T0)) s" >> $OUT/tests2.log
tail -3 $OUT/tests2.log
timeout 60 python3 tools/bench_rowops.py --backend cuda --ops cumsum --dtypes float32,float16 \
    --shapes 65536x4096,4096x65536,1x268435456 --batches 5 --no-compile --json $OUT/scan_items16.json > $OUT/scan_items16.log 2>&1
tail -8 $OUT/scan_items16.log
timeout 40 python3 split_ab.py > $OUT/split_ab.log 2>&1; cat $OUT/split_ab.log
echo "done after $((SECONDS - T0)) s"
