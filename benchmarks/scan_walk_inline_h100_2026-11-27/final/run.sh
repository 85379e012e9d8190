source .gpu/setup.sh > /dev/null
export PYTHONPATH=/tmp/site:$PWD XDG_CACHE_HOME=/tmp/xc
R=$PWD
mkdir -p /tmp/nvicd && echo libnvidia-opencl.so.1 > /tmp/nvicd/nvidia.icd
echo "== NVIDIA OpenCL scans"
(cd /tmp && OCL_ICD_VENDORS=/tmp/nvicd CLREDUCE_REQUIRE_DEVICES=nvidia timeout 250 python3 -m pytest -p no:cacheprovider -n 8 -q $R/tests/test_rowops.py -k "scan or cumsum or cumprod or past or walk" 2>&1 | grep -E "FAILED|passed|failed|rror" | tail -8)
echo "== CUDA scans"
(timeout 200 python3 -m pytest -p no:cacheprovider -n 8 -q tests/test_cuda_rowops.py -k "scan or cumsum or cumprod or past" 2>&1 | grep -E "FAILED|passed|failed" | tail -5)
mkdir -p $OUT/fin
S="--backend cuda --ops cumsum,cumprod --dtypes float32,float64 --shapes 1048576x32,262144x128,16384x1024 --no-compile --batches 3"
for round in 1 2; do
  for v in base new; do
    if [ $v = base ]; then root=$R/.gpu/sv/base; else root=$R; fi
    (cd /tmp && PYTHONPATH="/tmp/site:$root" timeout 200 python3 "$root/tools/bench_rowops.py" $S --json $OUT/fin/${v}_$round.json > $OUT/fin/${v}_$round.txt 2>&1)
    echo "== $v $round rc $?"; grep -E "^cum" $OUT/fin/${v}_$round.txt | cut -c1-75
  done
done
cd $OUT && tar czf fin.tgz fin && rm -rf fin
