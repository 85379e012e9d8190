# The public-call A/B of this folder on the GPU machine (.gpu/base: main at c3cc825; .gpu/setup.sh installs the wheels)
source .gpu/setup.sh
tools/ab_rowops_trees.sh .gpu/base cumsum --backend cuda --ops cumsum --dtypes float32,float16 \
    --shapes 1x268435456,64x4194304,4096x65536,65536x4096 --batches 5 --no-compile
