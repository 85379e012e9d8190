"""A/B of norm plans on one CPU OpenCL device, alternating rounds in one process: the default
plan against a forced one (the plan before CPU_PASSES). ms a call, device arrays.
usage: ab_norm.py P:D OPS SHAPES [dtype] [rounds]"""
import sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clreduce
from clreduce.plan_rowops import RowForce
dev = sys.argv[1]; ops = sys.argv[2].split(","); dtype = sys.argv[4] if len(sys.argv) > 4 else "float32"
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[3].split(",")]
p_, d_ = (int(v) for v in dev.split(":"))
ctx = cl.Context([cl.get_platforms()[p_].get_devices()[d_]]); q = cl.CommandQueue(ctx)
rng = np.random.default_rng(0)
def old_force(k, op=""):
    if op == "moments":
        return RowForce(cache="none")
    return RowForce(cache="registers") if k <= 4096 else RowForce(cache="none")
res = {}
data = {}
for r, k in shapes:
    x = rng.standard_normal((r, k)).astype(dtype)
    data[(r, k)] = (cla.to_device(q, x), cla.to_device(q, rng.uniform(0.5, 1.5, k).astype(dtype)))
for rd in range(rounds):
    for op in ops:
        for r, k in shapes:
            xd, wd = data[(r, k)]
            fn = getattr(clreduce, op)
            for name, force in (("new", None), ("old", old_force(k, op))):
                call = (lambda: fn(xd, force=force)) if op == "moments" else (lambda: fn(xd, wd, force=force))
                call(); q.finish()
                ts = []
                for _ in range(5):
                    t = time.perf_counter(); call(); q.finish(); ts.append(time.perf_counter() - t)
                res.setdefault((op, r, k, name), []).append(min(ts) * 1e3)
for op in ops:
    for r, k in shapes:
        new = res[(op, r, k, "new")]; old = res[(op, r, k, "old")]
        print(f"{op} {dtype} {r}x{k}: old {min(old):7.2f}-{max(old):7.2f}  new {min(new):7.2f}-{max(new):7.2f} ms", flush=True)
