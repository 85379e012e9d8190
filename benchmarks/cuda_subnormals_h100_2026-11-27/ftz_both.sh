source .gpu/setup.sh
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
timeout 270 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py tests/test_fastpath.py tests/test_fastpath_rows.py > $OUT/ftz_tests2.txt 2>&1; echo "tests rc $?"
grep -E "FAILED|passed|failed" $OUT/ftz_tests2.txt | tail -8
mkdir -p /tmp/res; OUT0=$OUT; export OUT=/tmp/res
tools/ab_rowops_trees.sh .gpu/base ftz --backend cuda --ops softmax,log_softmax,rms_norm,layer_norm --dtypes float32,float16 \
  --shapes 648720x128,16384x16384,4096x65536 --no-compile --batches 2 2>&1 | grep -v Warn | grep "rc"
cd /tmp/res && tar czf $OUT0/ftz.tgz . && ls | head -3
