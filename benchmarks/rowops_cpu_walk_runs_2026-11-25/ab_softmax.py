import time, sys, numpy as np, pyopencl as cl, pyopencl.array as cla
import clreduce
from clreduce.backends import opencl
name = sys.argv[3]
dev = [d for d in opencl.all_devices() if name in d.platform.name][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
for op in sys.argv[1].split(","):
    for s in sys.argv[2].split(","):
        r, k = map(int, s.split("x"))
        x = np.random.default_rng(0).standard_normal((r, k)).astype(np.float32)
        xd = cla.to_device(q, x)
        fn = getattr(clreduce, op)
        o = fn(xd, queue=q).get().astype(np.float64)
        xx = x.astype(np.float64); e = np.exp(xx - xx.max(-1, keepdims=True)); ref = e / e.sum(-1, keepdims=True)
        if op == "log_softmax": ref = np.log(ref)
        err = np.abs(o - ref).max() / np.abs(ref).max()
        ts = []
        for _ in range(5):
            t = time.perf_counter(); fn(xd, queue=q); q.finish(); ts.append(time.perf_counter() - t)
        print(name, op, r, k, f"{2*x.nbytes/np.median(ts)/1e9:.2f} GB/s", f"relerr {err:.2g}", flush=True)
