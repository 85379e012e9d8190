# grid stride (TREE_A) against one trip a work-item (TREE_B), alternating processes:
#   bash ab_trees.sh TREE_A TREE_B DEVICE OPS SHAPES ROUNDS
here=$(cd "$(dirname "$0")" && pwd)
for round in $(seq "$6"); do
  for tree in "$1" "$2"; do
    (cd "$tree" && XDG_CACHE_HOME=/tmp/xc-$(basename "$tree") PYTHONPATH="$tree" python "$here/rows.py" "$3" "$(basename "$tree")" "$4" "$5" 2>&1 | grep -v Warn)
  done
done
