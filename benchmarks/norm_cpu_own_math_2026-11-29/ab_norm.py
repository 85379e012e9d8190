"""ms a call of row ops on float32 device arrays (min, median of 9): argv DEVICE OPS."""
import time, statistics, sys, numpy as np, pyopencl.array as cla
from clreduce import rowops
from clreduce.backends import opencl
q = opencl.queue_for(sys.argv[1]); ops = sys.argv[2].split(",")
for op in ops:
    for rows, k in [(250000, 32), (125000, 64), (62500, 128), (8000, 1000)]:
        xs = [np.random.default_rng(i).standard_normal((rows, k)).astype(np.float32) for i in range(2)]
        ds = [cla.to_device(q, x) for x in xs]
        fn = getattr(rowops, op)
        fn(ds[0]); q.finish()
        r = []
        for i in range(9):
            t0 = time.perf_counter(); fn(ds[i % 2]); q.finish(); r.append(time.perf_counter() - t0)
        print(f"{op} {rows}x{k} {min(r)*1e3:.2f} {statistics.median(r)*1e3:.2f}", flush=True)
