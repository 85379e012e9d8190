import sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clreduce
from clreduce.backends import cl_pool
from clreduce import fastpath
sel = sys.argv[1]
dev = [d for p in cl.get_platforms() for d in p.get_devices() if sel.lower() in (p.name + d.name).lower()][-1]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
x = cla.to_device(q, np.random.default_rng(0).standard_normal((1, 128), dtype=np.float32))
y = cla.to_device(q, np.random.default_rng(0).standard_normal((64, 1024), dtype=np.float32))
ops = {"softmax 1x128": lambda: clreduce.softmax(x), "sum 1x128": lambda: clreduce.sum(x, axis=-1),
       "softmax 64x1024": lambda: clreduce.softmax(y), "mean 64x1024": lambda: clreduce.mean(y, axis=-1)}
res = {}
for rnd in range(3):
    for mode in ("off", "reuse"):
        cl_pool.mode_override = mode; fastpath.clear()
        for name, fn in ops.items():
            for _ in range(50): r = fn()
            q.finish()
            t0 = time.perf_counter()
            for _ in range(2000): r = fn()
            q.finish()
            res.setdefault((name, mode), []).append((time.perf_counter() - t0) / 2000)
for name in ops:
    print(f"{dev.name[:20]:20s} {name:16s} off {min(res[(name,'off')])*1e6:7.1f} us  reuse {min(res[(name,'reuse')])*1e6:7.1f} us")
