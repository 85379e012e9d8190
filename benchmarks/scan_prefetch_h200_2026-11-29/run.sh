# row_scan.cl SCAN_PREFETCH on the H200: main (.gpu/sv/head) against the working tree,
# alternating twice; then the CUDA scan tests on the new tree. From the repository root on
# the GPU machine after .gpu/setup.sh's wheels.
source .gpu/setup.sh
mkdir -p $OUT
t0=$SECONDS
S="--backend cuda --dtypes float32,float16 --no-compile --batches 3"
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head cumsum --ops cumsum --shapes 4096x65536,65536x4096,442368x128,8192x1000,16777216x16 $S 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
OUT=$OUT tools/ab_rowops_trees.sh .gpu/sv/head lcse --ops logcumsumexp --shapes 4096x65536,65536x4096,442368x128 $S 2>&1 | grep -v "^$"
echo "t=$((SECONDS-t0))"
timeout 240 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py tests/test_rowops.py tests/test_fastpath_rows.py -k "scan or cumsum or cumprod or logcumsumexp" 2>&1 | tail -3
echo "t=$((SECONDS-t0))"
