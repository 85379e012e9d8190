import json, sys, statistics, collections
d = json.load(open(sys.argv[1]))["results"]
by = collections.defaultdict(list)
for r in d:
    by[r["op"]].append(r)
print("| op | clreduce (numpy in) | clreduce (device array) | numpy formula | torch, 2 threads | numpy in / best peer (median) |")
print("|---|---:|---:|---:|---:|---:|")
for op, rs in by.items():
    g = lambda k: [r["gb"] / r[k] for r in rs if r.get(k)]
    def mm(v): return f"{min(v):.2f}-{max(v):.2f}"
    ratio = statistics.median(r["gb"] / r["clreduce_s"] / max(r["gb"] / r["numpy_s"], r["gb"] / r["torch2t_s"]) for r in rs)
    print(f"| {op} | {mm(g('clreduce_s'))} | {mm(g('cl_device_s'))} | {mm(g('numpy_s'))} | {mm(g('torch2t_s'))} | {ratio:.2f} |")
