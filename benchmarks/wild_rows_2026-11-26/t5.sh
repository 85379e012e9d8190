source .gpu/setup.sh
CLREDUCE_KERNEL_DIR=$PWD/.gpu/t5/cl_kernels timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py -k "past_the_range or nonfinite or far_from" 2>&1 | tail -2
S=442368x128,648720x128,1048576x32,16777216x16
for r in 1 2 3; do for t in head new t5; do echo "== $t $r"; PYTHONPATH=/tmp/site:$PWD/.gpu/$t python3 .gpu/mom.py $S moments float32,float16 | awk '{printf "%s ", $4} END {print ""}'; done; done
