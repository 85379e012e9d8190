source .gpu/setup.sh
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
mkdir -p /tmp/res
OUT0=$OUT
export OUT=/tmp/res
tools/ab_rowops_trees.sh .gpu/base scaled --backend cuda --ops rms_norm,layer_norm --dtypes float32,float16 \
  --shapes 648720x128,65536x4096,4096x65536,64x4194304 --no-compile --batches 3 2>&1 | grep -v Warn | grep "rc"
cd /tmp/res && tar czf $OUT0/scaled.tgz . && ls
