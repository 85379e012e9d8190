source .gpu/setup.sh
for r in 1 2 3; do for t in head new; do echo "== $t $r"; PYTHONPATH=/tmp/site:$PWD/.gpu/$t python3 .gpu/mom.py "$1" "$2" "$3"; done; done
