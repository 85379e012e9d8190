source .gpu/setup.sh
export PYTHONPATH=/tmp/site XDG_CACHE_HOME=/tmp/xc
python3 -c "import cupy; print('cupy', cupy.__version__)"
timeout 560 python3 -m pytest -q -p no:cacheprovider -x tests/test_cuda.py tests/test_cuda_rowops.py tests/test_fastpath.py tests/test_fastpath_rows.py > $OUT/ftz_tests.txt 2>&1; echo "tests rc $?"
grep -E "FAILED|passed|failed|Error" $OUT/ftz_tests.txt | tail -15
ls $XDG_CACHE_HOME/clreduce/cuda | wc -l
