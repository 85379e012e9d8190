source .gpu/setup.sh
export XDG_CACHE_HOME=/tmp/xab
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -p no:cacheprovider -n 16 -q tests/test_cuda_rowops.py tests/test_fastpath_rows.py 2>&1 | grep -E "^FAILED|passed|failed" | tail -5
PYTHONPATH=/tmp/site OUT=$OUT bash tools/ab_rowops_trees.sh .gpu/base back --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float32,float16 --shapes 4096x65536,8192x32768,2048x262144 --no-compile --batches 3
