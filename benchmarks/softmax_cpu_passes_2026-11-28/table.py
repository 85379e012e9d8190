"""ab.txt, ab_long.txt, ab_split.txt (rounds of `ROUND DEVICE TREE: op shape ms | ...`) -> a
markdown table of min-max ms a call per (device, op, shape), base / new.

    python table.py ab.txt ab_long.txt ab_split.txt > table.md
"""
import collections
import re
import sys

cells = collections.defaultdict(list)
lines = [line for name in (sys.argv[1:] or ["ab.txt"]) for line in open(name)]
for line in lines:
    m = re.match(r"(\d+) (.+) (base|new): (.*)", line.strip())
    if not m:
        continue
    _, dev, tree, rest = m.groups()
    for part in rest.split(" | "):
        op, shape, ms = part.split()
        cells[(dev, op, shape, tree)].append(float(ms))
print("| device | op | shape | base (ms) | new (ms) |\n|---|---|---|---:|---:|")
for (dev, op, shape, tree), v in cells.items():
    if tree != "base":
        continue
    n = cells[(dev, op, shape, "new")]
    print(f"| {dev} | {op} | {shape} | {min(v):.1f}-{max(v):.1f} | {min(n):.1f}-{max(n):.1f} |")
