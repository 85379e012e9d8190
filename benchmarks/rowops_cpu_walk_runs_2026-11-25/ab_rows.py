"""Time clreduce row ops on one OpenCL CPU device, pyopencl arrays in and out (the kernels and
the public call, no host copies): python ab_rows.py OPS SHAPES DEVICE, e.g.
    python ab_rows.py softmax,quantize_int8 244x65536,16000x1000 Portable
Run it with PYTHONPATH at two checkouts in turn for an A/B. GB/s = bytes read + written /
median of 5 calls."""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clreduce
from clreduce.backends import opencl

WRITTEN = {"moments": 0.0, "quantize_int8": 0.25}  # output bytes per input byte; else 1

name = sys.argv[3]
dev = [d for d in opencl.all_devices() if name in d.platform.name][0]
q = cl.CommandQueue(cl.Context([dev]))
for op in sys.argv[1].split(","):
    for s in sys.argv[2].split(","):
        r, k = map(int, s.split("x"))
        x = np.random.default_rng(0).standard_normal((r, k)).astype(np.float32)
        xd = cla.to_device(q, x)
        fn = getattr(clreduce, op)
        fn(xd, queue=q)
        q.finish()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            fn(xd, queue=q)
            q.finish()
            ts.append(time.perf_counter() - t)
        nbytes = x.nbytes * (1 + WRITTEN.get(op, 1.0))
        print(name[:5], op, s, f"{nbytes / np.median(ts) / 1e9:.2f}", flush=True)
