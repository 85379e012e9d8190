"""A/B: pyopencl-array row ops on a CPU device, results from plain buffers (off) vs cl_pool (reuse)."""
import sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clreduce
from clreduce.backends import cl_pool, opencl
from clreduce import fastpath
dev_sel = sys.argv[1]
ctx_dev = None
for p in cl.get_platforms():
    for d in p.get_devices():
        if dev_sel.lower() in (p.name + d.name).lower():
            ctx_dev = d
ctx = cl.Context([ctx_dev]); q = cl.CommandQueue(ctx)
rows, k = 16384, 1024  # 64 MB float32
x = cla.to_device(q, np.random.default_rng(0).standard_normal((rows, k), dtype=np.float32))
ops = {"softmax": lambda: clreduce.softmax(x), "rms_norm": lambda: clreduce.rms_norm(x),
       "cumsum": lambda: clreduce.cumsum(x, axis=-1), "quantize_int8": lambda: clreduce.quantize_int8(x)}
res = {}
for rnd in range(3):
    for mode in ("off", None):
        cl_pool.mode_override = mode
        fastpath.clear()
        for name, fn in ops.items():
            r = fn(); q.finish(); del r
            ts = []
            for _ in range(6):
                t0 = time.perf_counter(); r = fn(); q.finish(); ts.append(time.perf_counter() - t0); del r
            res.setdefault((name, mode), []).append(min(ts))
for name in ops:
    off = res[(name, "off")]; on = res[(name, None)]
    print(f"{ctx_dev.name[:30]:30s} {name:14s} off {min(off)*1e3:7.1f} ms  large {min(on)*1e3:7.1f} ms  x{min(off)/min(on):.2f}")
