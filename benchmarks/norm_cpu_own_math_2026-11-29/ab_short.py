import time, statistics, sys, numpy as np, pyopencl.array as cla
from clreduce import rowops
from clreduce.backends import opencl
q = opencl.queue_for(sys.argv[1]); ops = sys.argv[2].split(",")
out = []
for op in ops:
    for rows, k in [(250000, 32), (125000, 64)]:
        xs = [np.random.default_rng(i).standard_normal((rows, k)).astype(np.float32) for i in range(2)]
        ds = [cla.to_device(q, x) for x in xs]
        fn = getattr(rowops, op)
        fn(ds[0]); q.finish()
        r = []
        for i in range(15):
            t0 = time.perf_counter(); fn(ds[i % 2]); q.finish(); r.append(time.perf_counter() - t0)
        out.append(f"{op[:6]} {k}: {min(r)*1e3:.2f}")
print(" | ".join(out), flush=True)
