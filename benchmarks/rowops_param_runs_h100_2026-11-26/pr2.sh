source .gpu/setup.sh
bash .gpu/trees.sh pr2 ".gpu/base . .gpu/v_unroll" 2 --backend cuda --ops rms_norm,layer_norm --dtypes float16,float32 --shapes 4096x65536,64x4194304,1x268435456 --batches 3 --no-compile
