source .gpu/setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider tests/test_cuda_rowops.py -k "past_the_range or far_from or moments or norm or forced_variants" 2>&1 | tail -6
S=442368x128,648720x128,1048576x32,16777216x16,8192x1000,64x65536
for r in 1 2 3; do for t in head new; do echo "== $t $r"; PYTHONPATH=/tmp/site:$PWD/.gpu/$t python3 .gpu/mom.py $S moments,layer_norm float32,float16 | awk '{printf "%s ", $4} END {print ""}'; done; done
