"""One tree's softmax / log_softmax of few long float32 rows (split) (pyopencl arrays) on one OpenCL CPU
device: ms a call, best of 5, per shape. Run with PYTHONPATH=<tree> for each tree, alternating.

    python ab_split.py DEVICE_PREFIX softmax,log_softmax
"""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clreduce import rowops
from clreduce.backends import opencl

dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.name.startswith(sys.argv[1])][0]
q = opencl.queue_for(dev)
out = []
for op in sys.argv[2].split(","):
    for shape in ((1, 4194304), (3, 1048576), (1, 131072), (1, 32768)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xd = cla.to_device(q, x)
        fn = getattr(rowops, op)
        fn(xd)
        q.finish()
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn(xd)
            q.finish()
            ts.append(time.perf_counter() - t0)
        out.append(f"{op} {shape[0]}x{shape[1]} {min(ts) * 1e3:.1f}")
print(" | ".join(out))
