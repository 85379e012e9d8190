#!/usr/bin/env bash
# A/B of two source trees' row ops on one GPU machine: tools/bench_rowops.py of BASE (another
# tree's root, e.g. `git archive <rev> cl_kernels clreduce tools | tar -x -C BASE`) and of this
# tree, alternating twice (base, new, base, new) so both see the same machine and clocks. Each
# tree runs its own copy of bench_rowops.py (the script puts its own tree first on sys.path).
# Writes $OUT/LABEL_{base,new}_{1,2}.{json,txt}; prints each run's table.
#
#   tools/ab_rowops_trees.sh BASE LABEL --backend cuda --ops cumsum --dtypes float32 --shapes 1x268435456 ...
#
# PYTHONPATH may start with a folder of wheels (the GPU machine's /tmp/site); OUT defaults to ".".
set -u
base=$(cd "$1" && pwd); label=$2; shift 2
new=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-.}
site=${PYTHONPATH:+${PYTHONPATH%%:*}:}
t0=$SECONDS
for round in 1 2; do
  for tree in base new; do
    if [ "$tree" = base ]; then root=$base; else root=$new; fi
    (cd /tmp && PYTHONPATH="$site$root" timeout 200 python3 "$root/tools/bench_rowops.py" "$@" \
        --json "$out/${label}_${tree}_$round.json" > "$out/${label}_${tree}_$round.txt" 2>&1)
    echo "bench $tree $round rc $? at $((SECONDS - t0)) s"
    tail -n +3 "$out/${label}_${tree}_$round.txt"
  done
done
