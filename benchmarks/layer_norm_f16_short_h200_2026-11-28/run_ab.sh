# A/B of trees (args) over ROUNDS rounds, then torch.compile numbers, then extra
source .gpu/setup.sh
R=$PWD
mkdir -p $OUT
for round in $(seq ${ROUNDS:-3}); do
  for t in "$@"; do
    CK=${CK0:-$([ $round = 1 ] && echo 1 || echo 0)}
    (cd .gpu/sv/$t && PYTHONPATH=/tmp/site:$PWD TAG=$t CK=$CK timeout 250 python3 $R/.gpu/ln/ab.py 2>&1 | grep -v -i warn) | tee -a $OUT/ab.txt
  done
done
