source .gpu/setup.sh
mkdir -p $OUT
t0=$SECONDS
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_fastpath_rows.py tests/test_cuda_rowops.py 2>&1 | tail -3
echo "t=$((SECONDS-t0)) tests"
# mutation: the twin without its stride check must fail the lean test
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r clreduce tests /tmp/mut/
sed -i 's/ and tuple(x.stride()) == _c_strides(rows_shape))/)/' /tmp/mut/clreduce/backends/cuda/row_fast.py
grep -c "_c_strides(rows_shape)" /tmp/mut/clreduce/backends/cuda/row_fast.py
(cd /tmp/mut && timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_rows.py -k "torch_lean" 2>&1 | tail -3)
echo "t=$((SECONDS-t0)) mutation"
for r in 1 2; do
  for t in base new; do
    if [ $t = base ]; then d=.gpu/sv/base; else d=.; fi
    timeout 100 python3 $d/tools/bench_percall_rows.py --cuda --calls 2000 --repeats 3 --json $OUT/percall_rows_$t$r.json 2>&1 | grep -v Warn | tail -12 | sed "s/^/$t$r /"
  done
done
echo "t=$((SECONDS-t0)) percall"
timeout 200 python3 tools/bench_rowops.py --backend cuda --ops softmax,log_softmax,rms_norm,layer_norm --shapes 8192x1000 --dtypes float16,float32 --batches 3 --json $OUT/rows_8192x1000.json 2>&1 | grep -v -i "warn\|online softmax\|split the reduction\|important use\|^$\|softmax\.$" | tee $OUT/rows_8192x1000.txt
echo "t=$((SECONDS-t0)) bench"
