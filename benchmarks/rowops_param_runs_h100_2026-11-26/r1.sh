source .gpu/setup.sh
bash .gpu/trees.sh r1 ".gpu/head .gpu/v_r2 .gpu/v_r4" 1 --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 64x4194304,1x268435456,4096x65536 --batches 3 --no-compile
