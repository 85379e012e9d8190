source .gpu/setup.sh
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py -k "subnormal or cubin" 2>&1 | tail -1
mkdir -p /tmp/res2; OUT0=$OUT; export OUT=/tmp/res2
tools/ab_rowops_trees.sh .gpu/base ftzh --backend cuda --ops rms_norm,softmax,layer_norm --dtypes float16 \
  --shapes 648720x128,16384x16384 --no-compile --batches 2 2>&1 | grep -v Warn | grep "rc\|648720\|16384x"
cd /tmp/res2 && tar czf $OUT0/ftzh.tgz .
