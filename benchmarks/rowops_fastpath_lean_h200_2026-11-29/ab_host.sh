source .gpu/setup.sh
mkdir -p $OUT
for r in 1 2; do
  for t in base new; do
    if [ $t = base ]; then d=$PWD/.gpu/sv/base; else d=$PWD; fi
    python3 .gpu/pub_host.py $d $t$r 2>&1 | grep -v Warn | tee -a $OUT/ab_host.txt
  done
done
