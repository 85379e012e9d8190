"""One tree's absmax_scale / quantize_int8, float32 pyopencl arrays, ms a call (best of 5)."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla
from clreduce import rowops
dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.name.startswith(sys.argv[1])][0]
from clreduce.backends import opencl
q = opencl.queue_for(dev)
out = []
for op in sys.argv[2].split(","):
    for shape in ((500000, 32), (250000, 64), (125000, 128), (16000, 1000), (4000, 4096)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xd = cla.to_device(q, x)
        fn = getattr(rowops, op)
        fn(xd); q.finish()
        ts = []
        for _ in range(5):
            t0 = time.perf_counter(); fn(xd); q.finish(); ts.append(time.perf_counter() - t0)
        out.append(f"{op} {shape[0]}x{shape[1]} {min(ts)*1e3:.1f}")
print(" | ".join(out))
