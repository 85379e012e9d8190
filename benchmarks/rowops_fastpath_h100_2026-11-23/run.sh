#!/bin/bash
# rowcall GPU run: the row-op fast path's CUDA tests, then per-call and row-op benchmarks.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/src"
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt 2>&1
python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)" >> $OUT/gpu.txt 2>&1
timeout 70 python3 -m pytest -q -p no:cacheprovider -n 4 tests/test_fastpath_rows.py tests/test_fastpath.py > $OUT/tests_fastpath.txt 2>&1
echo "rc $? at $((SECONDS - T0)) s" >> $OUT/tests_fastpath.txt
timeout 40 python3 tools/bench_percall_rows.py --cuda --calls 2000 --repeats 3 --json $OUT/percall_rows_cuda.json > $OUT/percall_rows_cuda.txt 2>&1
echo "rc $? at $((SECONDS - T0)) s" >> $OUT/percall_rows_cuda.txt
S=648720x128,442368x128,1048576x32,8192x1000
timeout 80 python3 tools/bench_rowops.py --backend cuda --ops rms_norm,softmax,layer_norm --dtypes float16 --shapes $S --batches 5 --json $OUT/rowops_fast.json > $OUT/rowops_fast.txt 2>&1
echo "rc $? at $((SECONDS - T0)) s" >> $OUT/rowops_fast.txt
if (( SECONDS - T0 < 150 )); then
  CLREDUCE_FAST_PATH=0 timeout 25 python3 tools/bench_rowops.py --backend cuda --ops rms_norm,softmax,layer_norm --dtypes float16 --shapes $S --batches 5 --no-compile --json $OUT/rowops_fullpath.json > $OUT/rowops_fullpath.txt 2>&1
  echo "rc $? at $((SECONDS - T0)) s" >> $OUT/rowops_fullpath.txt
fi
if (( SECONDS - T0 < 175 )); then
  timeout $((215 - SECONDS + T0)) python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_cuda_rowops.py > $OUT/tests_cuda_rowops.txt 2>&1
  echo "rc $? at $((SECONDS - T0)) s" >> $OUT/tests_cuda_rowops.txt
fi
tail -2 $OUT/*.txt
