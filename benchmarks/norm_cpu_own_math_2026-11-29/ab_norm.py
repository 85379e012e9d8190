"""ms a call of row ops on float32 device arrays (min, median of CALLS calls, each ended by
queue.finish()): argv DEVICE OPS [SHAPES RxK,... [CALLS]]."""
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

from clreduce import rowops
from clreduce.backends import opencl

q = opencl.queue_for(sys.argv[1])
ops = sys.argv[2].split(",")
shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else \
    [(250000, 32), (125000, 64), (62500, 128), (8000, 1000)]
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 9
for op in ops:
    for rows, k in shapes:
        xs = [np.random.default_rng(i).standard_normal((rows, k)).astype(np.float32) for i in range(2)]
        ds = [cla.to_device(q, x) for x in xs]
        fn = getattr(rowops, op)
        fn(ds[0])
        q.finish()
        r = []
        for i in range(calls):
            t0 = time.perf_counter()
            fn(ds[i % 2])
            q.finish()
            r.append(time.perf_counter() - t0)
        print(f"{op} {rows}x{k} {min(r)*1e3:.2f} {statistics.median(r)*1e3:.2f}", flush=True)
