"""ms a call of cumsum along the rows of device arrays, row_scan.cl's lane accesses as vloadn /
vstoren ("vload") or as element loops (SCAN_OWN_ACCESS, "loops"), one process per variant.

argv: VARIANT DEVICE DTYPE SHAPES [CALLS]; VARIANT vload or loops (plan_scan's
SCAN_OWN_ACCESS_IMPLEMENTATIONS patched to none, or to the device's implementation), or plan
(the tree's own planner, for A/Bs of two trees on PYTHONPATH). OP=cumprod in the environment
times cumprod instead (inputs near 1).
Environment TRIP=N patches plan_scan.SCAN_CPU_ONE_TRIP_LEN (0: the grid stride for every row).
Prints min and median ms of CALLS calls, each ended by queue.finish(), two inputs alternating.
"""
import os
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

import clreduce.plan_scan as plan_scan
from clreduce import rowops
from clreduce.backends import opencl

variant, device, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[4].split(",")]
calls = int(sys.argv[5]) if len(sys.argv) > 5 else 9
q = opencl.queue_for(device)
impl = opencl.caps_of(q.device).implementation
if variant != "plan":
    plan_scan.SCAN_OWN_ACCESS_IMPLEMENTATIONS = (impl,) if variant == "loops" else ()
op = os.environ.get("OP", "cumsum")
fn = getattr(rowops, op)
ref_fn = {"cumsum": np.cumsum, "cumprod": np.cumprod}[op]
if "TRIP" in os.environ:
    plan_scan.SCAN_CPU_ONE_TRIP_LEN = int(os.environ["TRIP"])
for rows, k in shapes:
    rng = np.random.default_rng(0)
    if dtype.startswith("int"):
        xs = [rng.integers(-1000, 1000, (rows, k)).astype(dtype) for _ in range(2)]
    else:
        xs = [(rng.standard_normal((rows, k)) * (0.01 if op == "cumprod" else 1)
               + (1 if op == "cumprod" else 0)).astype(dtype) for _ in range(2)]
    ds = [cla.to_device(q, x) for x in xs]
    got = fn(ds[0], axis=-1).get()
    assert np.allclose(got, ref_fn(xs[0], axis=-1, dtype=got.dtype), rtol=1e-3, atol=1e-2), "wrong results"
    r = []
    for i in range(calls):
        t0 = time.perf_counter()
        fn(ds[i % 2], axis=-1)
        q.finish()
        r.append(time.perf_counter() - t0)
    print(f"{variant:5s} trip={plan_scan.SCAN_CPU_ONE_TRIP_LEN} {device} {dtype} {op} {rows}x{k} {min(r) * 1e3:.2f} {statistics.median(r) * 1e3:.2f}",
          flush=True)
