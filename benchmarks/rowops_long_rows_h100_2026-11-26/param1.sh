source .gpu/setup.sh
T0=$SECONDS
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -rf --tb=short tests/test_cuda_rowops.py tests/test_nvidia_opencl.py tests/test_rowops.py tests/test_fastpath_rows.py > $OUT/t1.log 2>&1
echo "row tests rc $? at $((SECONDS-T0)) s"; grep -E " passed| failed|^FAILED|^ERROR|nvidia-gpu|pocl" $OUT/t1.log | head -20
bash tools/ab_rowops_trees.sh .gpu/prev param --backend cuda --ops rms_norm,layer_norm --dtypes float16,float32 --shapes 4096x65536,64x4194304,1x268435456 --batches 3 --no-compile 2>&1 | grep -v -i "warn\|online softmax\|split the reduction\|important use case\|^$"
echo "done at $((SECONDS-T0)) s"
