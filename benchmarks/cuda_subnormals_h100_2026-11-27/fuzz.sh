source .gpu/setup.sh
export PYTHONPATH=/tmp/site:$PWD XDG_CACHE_HOME=/tmp/xc
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py -k "integer_scans or past_the_range or overflow" 2>&1 | tail -3
timeout 380 python3 .gpu/fuzz_cuda.py ${SEED:-21} ${SECS:-330} > $OUT/fuzz_cuda.log 2>&1; echo "fuzz rc $?"
grep -c "^\[" $OUT/fuzz_cuda.log; grep "^\[" $OUT/fuzz_cuda.log | cut -c1-300 | sort | head -70; grep -A12 Traceback $OUT/fuzz_cuda.log | head -30; tail -2 $OUT/fuzz_cuda.log
