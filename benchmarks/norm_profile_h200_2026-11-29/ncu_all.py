"""Reads ncu --csv from stdin; prints every launch's metrics (stall ratios of 0.3 and up)."""
import csv, sys, collections
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith('"'))]
if not rows:
    sys.exit("no ncu rows")
head, body = rows[0], rows[1:]
i_id, i_name, i_val = head.index("ID"), head.index("Metric Name"), head.index("Metric Value")
i_k = head.index("Kernel Name")
by = collections.defaultdict(dict)
names = {}
for r in body:
    by[r[i_id]][r[i_name]] = r[i_val]
    names[r[i_id]] = r[i_k][:60]
for k, m in by.items():
    print("launch", k, names[k])
    for name, v in sorted(m.items()):
        if "stalled" in name and float(v.replace(",", "") or 0) < 0.3:
            continue
        print(f"  {name:80s} {v}")
