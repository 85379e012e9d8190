source .gpu/setup.sh
R=$PWD
for round in $(seq ${ROUNDS:-2}); do
for t in "$@"; do
  (cd .gpu/sv/$t && PYTHONPATH=/tmp/site:$PWD TAG=$t NOCOMP=1 timeout 200 python3 $R/.gpu/kprof.py $CASES 2>&1 | grep -v -i warn)
done; done
