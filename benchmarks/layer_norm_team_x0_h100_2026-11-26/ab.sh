# The A/Bs of this folder on the GPU machine (.gpu/base: main at c3cc825; .gpu/setup.sh installs the wheels)
source .gpu/setup.sh
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_cuda_rowops.py -k "norm or adversarial or far_from_zero"
tools/ab_rowops_trees.sh .gpu/base ln --backend cuda --ops layer_norm --dtypes float16,float32 \
    --shapes 648720x128,442368x128,1048576x32,65536x4096 --batches 5 --no-compile
tools/ab_rowops_trees.sh .gpu/base ln2 --backend cuda --ops layer_norm --dtypes float16,float32 \
    --shapes 65536x4096,16384x2048,648720x128,8192x1000 --batches 5 --no-compile
