source .gpu/setup.sh
bash .gpu/trees.sh b1 ".gpu/head .gpu/v_back" 2 --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 64x4194304,1x268435456 --batches 3 --no-compile
