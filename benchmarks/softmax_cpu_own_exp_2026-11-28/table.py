"""Best ms a call per (block, tree, cell) over the rounds of ab.txt (ab_trees.sh's output, each
block under a '# ' heading): base, work, and base / work."""
import collections
import sys

best = collections.defaultdict(dict)
block = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "ab.txt"):
    line = line.rstrip("\n")
    if line.startswith("# ") and ":" not in line.split(",")[0][2:] and not line.startswith("# ab_trees"):
        block = line[2:]
        continue
    if line.startswith("#") or not line:
        continue
    tree, _, rest = line.partition(": ")
    for cell in rest.split(" | "):
        name, ms = cell.strip().rsplit(" ", 1)
        cur = best[(block, name)].get(tree, float("inf"))
        best[(block, name)][tree] = min(float(ms), cur)
last = None
for (block, name), trees in best.items():
    if block != last:
        print(f"{block}:")
        last = block
    print(f"  {name:28s} {trees['base']:6.1f} {trees['work']:6.1f} {trees['base'] / trees['work']:5.2f}x")
