source .gpu/setup.sh
T0=$SECONDS; R0=$PWD
for round in 1 2; do
  for tree in base m1 m4 m5 m6 m8 p6 p8; do
    (cd /tmp && PYTHONPATH=/tmp/site:$R0/.gpu/$tree timeout 100 python3 $R0/.gpu/tools/ln_variants.py $tree $OUT/${tree}_$round.json > $OUT/${tree}_$round.txt 2>&1)
    echo "$tree $round rc $? at $((SECONDS-T0)) s"
  done
done

cat $OUT/tc.txt | tail -5
cat $OUT/*_[12].txt > /tmp/all.txt; rm -f $OUT/*; cp /tmp/all.txt $OUT/all.txt
