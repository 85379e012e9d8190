"""ms a call of row ops along the last axis on device arrays, each call ended by queue.finish():
argv DEVICE DTYPE OPS SHAPES CALLS; prints "op RxK min median" a line."""
import inspect
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

import clreduce
from clreduce.backends import opencl

q = opencl.queue_for(sys.argv[1])
dt = sys.argv[2]
ops = sys.argv[3].split(",")
shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[4].split(",")]
calls = int(sys.argv[5])
for op in ops:
    for rows, k in shapes:
        xs = [np.random.default_rng(i).standard_normal((rows, k)).astype(dt) for i in range(2)]
        ds = [cla.to_device(q, x) for x in xs]
        f = getattr(clreduce, op)
        if "axis" in inspect.signature(f).parameters:
            def fn(a, f=f):
                return f(a, axis=-1)
        else:
            fn = f
        fn(ds[0])
        q.finish()
        r = []
        for i in range(calls):
            t0 = time.perf_counter()
            fn(ds[i % 2])
            q.finish()
            r.append(time.perf_counter() - t0)
        print(f"{op} {rows}x{k} {min(r)*1e3:.3f} {statistics.median(r)*1e3:.3f}", flush=True)
