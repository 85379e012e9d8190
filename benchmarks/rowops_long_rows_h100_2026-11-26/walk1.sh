source .gpu/setup.sh
bash tools/ab_rowops_trees.sh .gpu/base walk --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 4096x65536,64x4194304,1x268435456 --batches 3 --no-compile 2>&1 | grep -v -i "warn\|online softmax\|split the reduction\|important use case\|^$"
