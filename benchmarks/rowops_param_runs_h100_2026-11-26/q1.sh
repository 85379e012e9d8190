source .gpu/setup.sh
bash .gpu/trees.sh q$1 "$2" 1 --backend cuda --ops softmax,rms_norm,layer_norm --dtypes float16,float32 --shapes 4096x65536,64x4194304,1x268435456 --batches 3 --no-compile
