"""ms a call of OPS on SHAPES (float32 device arrays, weight of ones for the norms), best of 7,
one line; run once per tree with PYTHONPATH pointing at it (ab_trees.sh).
usage: rows.py P:D TAG OPS SHAPES"""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla, clreduce
p_, d_ = (int(v) for v in sys.argv[1].split(":"))
ctx = cl.Context([cl.get_platforms()[p_].get_devices()[d_]]); q = cl.CommandQueue(ctx)
out = []
for op in sys.argv[3].split(","):
    for s in sys.argv[4].split(","):
        r, k = (int(v) for v in s.split("x"))
        xd = cla.to_device(q, np.random.default_rng(0).standard_normal((r, k)).astype("float32"))
        wd = cla.to_device(q, np.ones(k, np.float32))
        f = getattr(clreduce, op)
        c = (lambda: f(xd)) if op in ("softmax", "log_softmax", "moments") else (lambda: f(xd, wd))
        c(); q.finish(); ts = []
        for _ in range(7):
            t = time.perf_counter(); c(); q.finish(); ts.append(time.perf_counter() - t)
        out.append(f"{op[:5]} {s} {min(ts)*1e3:6.2f}")
print(sys.argv[2], " | ".join(out), flush=True)
