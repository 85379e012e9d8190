"""One tree's softmax / log_softmax of float32 pyopencl arrays on one OpenCL CPU device: ms a
call (best of 7) per shape. Run with PYTHONPATH=<tree> for each tree, alternating.

    python ab.py DEVICE_PREFIX softmax,log_softmax [short|long|split|f16]

short: rows that fit a work-item (ab.txt); long: longer rows, two or more a core (ab_long.txt);
split: fewer long rows than two a core (ab_split.txt); f16: float16 rows of each kind
(ab_f16.txt).
"""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clreduce import rowops
from clreduce.backends import opencl

SHAPES = {
    "short": ((125000, 64), (62500, 128), (8000, 1000), (1953, 4096)),
    "long": ((250000, 32), (122, 65536), (30, 262144), (8, 1048576), (1, 4194304)),
    "split": ((1, 4194304), (3, 1048576), (1, 131072), (1, 32768)),
    "f16": ((125000, 64), (62500, 128), (8000, 1000), (122, 65536), (1, 4194304)),
}
dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.name.startswith(sys.argv[1])][0]
q = opencl.queue_for(dev)
out = []
for op in sys.argv[2].split(","):
    fn = getattr(rowops, op)
    kind = sys.argv[3] if len(sys.argv) > 3 else "short"
    for shape in SHAPES[kind]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float16 if kind == "f16" else np.float32)
        xd = cla.to_device(q, x)
        fn(xd)
        q.finish()
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            fn(xd)
            q.finish()
            times.append(time.perf_counter() - t0)
        out.append(f"{op} {shape[0]}x{shape[1]} {min(times) * 1e3:.1f}")
print(" | ".join(out))
