"""Time clreduce row ops on one OpenCL CPU device, numpy in -> numpy out (the public call):
python ab_host_rows.py OPS SHAPES DEVICE; run with PYTHONPATH at two checkouts in turn.
GB/s = bytes read + written / median of 7 calls (after 2 warm-up calls, so the fast path runs)."""
import sys
import time

import numpy as np

import clreduce
from clreduce.backends import opencl

WRITTEN = {"moments": 0.0, "quantize_int8": 0.25, "cumsum": 1.0}

name = sys.argv[3]
dev = [d for d in opencl.all_devices() if name in d.platform.name][0]
for op in sys.argv[1].split(","):
    for s in sys.argv[2].split(","):
        r, k = map(int, s.split("x"))
        x = np.random.default_rng(0).standard_normal((r, k)).astype(np.float32)
        fn = getattr(clreduce, op)
        kw = {"axis": -1} if op == "cumsum" else {}
        fn(x, device=dev, **kw); fn(x, device=dev, **kw)
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            fn(x, device=dev, **kw)
            ts.append(time.perf_counter() - t)
        nbytes = x.nbytes * (1 + WRITTEN.get(op, 1.0))
        print(name[:5], op, s, f"{nbytes / np.median(ts) / 1e9:.2f}", flush=True)
