set +e
mkdir -p $OUT
export CASES="float16:16777216x16,float16:1048576x32,float16:4194304x64,float16:442368x128,float16:65536x4096,float16:8192x1000,float32:16777216x16,float32:442368x128"
ROUNDS=3 bash .gpu/ln/run1.sh hd pa pb
source .gpu/setup.sh
(cd .gpu/sv/pa && PYTHONPATH=/tmp/site:$PWD timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py 2>&1 | tail -4) | tee $OUT/pytest.txt
