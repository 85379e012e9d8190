"""Ranges of the clreduce column (GB/s) per tree and shape over the rounds of an A/B file."""
import re
import sys
from collections import defaultdict

for path in sys.argv[1:]:
    vals, torch, tree = defaultdict(list), defaultdict(list), None
    for line in open(path):
        m = re.match(r"== round \d+ (?:tree )?(\S+)", line)
        if m:
            tree = m.group(1).rstrip("/").split("/")[-1]
            continue
        f = line.split()
        if len(f) == 6 and f[0] == "logcumsumexp":
            vals[(f[1], tree)].append(float(f[2]))
            torch[f[1]].append(float(f[5]))
    print(path)
    trees = sorted({t for _, t in vals})
    for shape in dict.fromkeys(s for s, _ in vals):
        cells = [f"{t} {min(vals[shape, t]):.2f}-{max(vals[shape, t]):.2f}" for t in trees]
        print(f"  {shape:12s} " + " | ".join(cells) + f" | torch {min(torch[shape]):.2f}-{max(torch[shape]):.2f}")
