source .gpu/setup.sh
python3 -m pytest -q -p no:cacheprovider tests/test_accuracy.py tests/test_cuda.py -k "var or std" 2>&1 | tail -3
S=442368x128,1048576x32,16777216x16,8192x1000,64x65536
for r in 1 2 3; do for t in head new; do echo "== $t $r"; PYTHONPATH=/tmp/site:$PWD/.gpu/$t python3 .gpu/varb.py $S var float32,float16 | awk '{printf "%s ", $5} END {print ""}'; done; done
