source .gpu/setup.sh
mkdir -p $OUT
t0=$SECONDS
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head flatw --backend cuda --ops rms_norm,layer_norm --dtypes float16,float32 --shapes 1x268435456 --no-compile --batches 5 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py tests/test_rowops.py -k "norm or flat" 2>&1 | tail -3
echo "t=$((SECONDS-t0))"
