source .gpu/setup.sh
S=442368x128,648720x128,1048576x32,16777216x16
for r in 1 2 3; do for t in head new t1 t4; do echo "== $t $r"; PYTHONPATH=/tmp/site:$PWD/.gpu/$t python3 .gpu/mom.py $S moments float32,float16 | awk '{printf "%s ", $4} END {print ""}'; done; done
