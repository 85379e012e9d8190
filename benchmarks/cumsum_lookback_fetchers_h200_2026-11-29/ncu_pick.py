"""Reads ncu --csv from stdin; prints the metrics of launches longer than 100 us."""
import csv, sys, collections
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith('"'))]
head, body = rows[0], rows[1:]
i_id, i_name, i_val = head.index("ID"), head.index("Metric Name"), head.index("Metric Value")
by = collections.defaultdict(dict)
for r in body:
    by[r[i_id]][r[i_name]] = r[i_val]
for k, m in by.items():
    d = float(m.get("gpu__time_duration.sum", "0").replace(",", ""))
    if d > 100e3 or d > 100:  # ns or us units
        print("launch", k)
        for name, v in sorted(m.items()):
            if "stalled" in name and float(v.replace(",", "") or 0) < 0.05:
                continue
            print(f"  {name:80s} {v}")
