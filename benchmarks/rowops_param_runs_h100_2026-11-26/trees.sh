# rotate bench_rowops over trees: trees.sh LABEL "tree1 tree2 ..." ROUNDS <bench args>
label=$1; trees=$2; rounds=$3; shift 3
site=/tmp/site; t0=$SECONDS
for round in $(seq 1 $rounds); do
  for tree in $trees; do
    root=$(cd $tree && pwd)
    (cd /tmp && PYTHONPATH="$site:$root" timeout 200 python3 "$root/tools/bench_rowops.py" "$@" --json "$OUT/${label}_$(basename $tree)_$round.json" > "$OUT/${label}_$(basename $tree)_$round.txt" 2>&1)
    echo "== $(basename $tree) $round rc $? at $((SECONDS - t0)) s"
    tail -n +3 "$OUT/${label}_$(basename $tree)_$round.txt" | grep -v -i "warn\|online softmax\|split the reduction\|important use case\|^$" | awk '{print $1, $2, $3, $4, $5, $7}'
  done
done
