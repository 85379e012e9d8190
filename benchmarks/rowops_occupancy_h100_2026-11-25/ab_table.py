import json, collections, sys
d=collections.defaultdict(dict)
base=sys.argv[1] if len(sys.argv)>1 else "."
prefix=sys.argv[2] if len(sys.argv)>2 else "rows"
for t in ("base","new"):
    for r in (1,2):
        for x in json.load(open(f"{base}/{prefix}_{t}_{r}.json"))["results"]:
            k=(x["op"],x["dtype"],"x".join(map(str,x["shape"])))
            d[k][(t,r)]=x["gb"]/x["clreduce_ms"]*1e3
            d[k]["torch"]=x["gb"]/x["torch_ms"]*1e3; d[k]["copy"]=x["gb"]/x["copy_ms"]*1e3
            d[k][("err",t)]=x["max_abs_err_vs_float64"]
for k,v in d.items():
    b=[v[("base",r)] for r in (1,2)]; n=[v[("new",r)] for r in (1,2)]
    ratio = (sum(n)/2)/(sum(b)/2)
    print(f"{k[0]:12s} {k[1]:8s} {k[2]:12s} base {'/'.join(f'{x:.0f}' for x in b):>10s} new {'/'.join(f'{x:.0f}' for x in n):>10s} x{ratio:.3f} torch {v['torch']:.0f} copy {v['copy']:.0f} err {v[('err','base')]:.2g}/{v[('err','new')]:.2g}")
