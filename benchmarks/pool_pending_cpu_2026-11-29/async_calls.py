"""Back-to-back row-op calls on a pyopencl device array, each result dropped at once, with or
without a queue.finish() after each call: ms a call and the process's peak memory.
argv: DEVICE OP ROWS K CALLS SYNC(0/1)."""
import inspect
import resource
import sys
import time

import numpy as np
import pyopencl.array as cla

import clreduce
from clreduce.backends import opencl

sel, op, rows, k, n, sync = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
q = opencl.queue_for(sel)
x = cla.to_device(q, np.random.default_rng(0).standard_normal((rows, k)).astype(np.float32))
f = getattr(clreduce, op)
kw = {"axis": -1} if "axis" in inspect.signature(f).parameters else {}
f(x, **kw)
q.finish()
t = time.perf_counter()
for _ in range(n):
    f(x, **kw)
    if sync:
        q.finish()
q.finish()
per_call = (time.perf_counter() - t) / n
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{sel} {op} {rows}x{k} float32 sync={sync}: {per_call * 1e3:.2f} ms a call, peak memory {peak:.0f} MB "
      f"(input {x.nbytes / 1e6:.0f} MB)", flush=True)
