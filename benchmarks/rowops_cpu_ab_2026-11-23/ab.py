import numpy as np, time, sys, clreduce
from clreduce import rowops
from clreduce.plan_rowops import RowForce
import pyopencl as cl, pyopencl.array as cla
shape = tuple(int(v) for v in sys.argv[1].split("x")); op = sys.argv[2]; dev = sys.argv[3]
variants = eval(sys.argv[4])
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
w = np.ones(shape[1], np.float32)
plats = cl.get_platforms()
d = [dd for p in plats for dd in p.get_devices() if (dev in p.name.lower() or (dev == "pocl" and "portable" in p.name.lower()))][0]
ctx = cl.Context([d]); q = cl.CommandQueue(ctx)
xd = cla.to_device(q, x); wd = cla.to_device(q, w)
f = getattr(rowops, op)
def call(force):
    r = f(xd, wd, queue=q, force=force) if "norm" in op else f(xd, queue=q, force=force)
    q.finish(); return r
def npf():
    if op == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True)); return e / e.sum(-1, keepdims=True)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
res = {k: [] for k in list(variants) + ["numpy"]}
for k, v in variants.items(): call(v)
for rnd in range(5):
    for k, v in list(variants.items()) + [("numpy", None)]:
        t0 = time.perf_counter(); (npf() if k == "numpy" else call(v)); res[k].append(time.perf_counter() - t0)
base = np.median(res["default"])
print(op, dev, shape, " ".join(f"{k}={np.median(t)*1e3:.1f}ms({np.median(t)/base:.2f})" for k, t in res.items()), flush=True)
