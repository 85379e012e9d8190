import json, collections, sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
trees=[]
for r in rows:
    if r["tree"] not in trees: trees.append(r["tree"])
d=collections.defaultdict(lambda: collections.defaultdict(list)); errs=collections.defaultdict(float)
for r in rows:
    k=(r["op"],r["dtype"],r["shape"],r["lanes"],r["forced"]); d[k][r["tree"]].append(r["gbs"])
    errs[(k, r["tree"])]=max(errs[(k, r["tree"])], r["err"])
print("case".ljust(40)+"".join(t.rjust(11) for t in trees))
for k,m in d.items():
    print(f"{k[0][:6]} {k[1][-2:]} {k[2]} L{k[3]}{' F' if k[4] else ''}".ljust(40)+"".join(("/".join(f"{x:.0f}" for x in m[t])).rjust(11) for t in trees))
for k in d:
    es={t: errs[(k,t)] for t in trees}
    if max(es.values()) > 1.01*min(es.values()): print("ERR DIFF", k, es)
