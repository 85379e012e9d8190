"""Interleaved A/B on one CPU OpenCL device: scale rows short enough for registers, the
register cache (the plan before 2026-11-28, forced) against the new default (read twice from
memory), float32 pyopencl arrays in and out, ms a call (best of 3 calls, per round), three
rounds alternating the order, bits compared.

    OCL_ICD_VENDORS=... python ab_cache.py "pthread-AMD EPYC"      # a device-name prefix
    python ab_cache.py "AMD EPYC" walk   # the walk (cache "none", forced) against the default,
                                          # for the devices that keep their register plans
"""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clreduce import rowops
from clreduce.backends import opencl, opencl_rowops
from clreduce.plan_rowops import RowForce, RowProblem, plan_row

dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.name.startswith(sys.argv[1])][0]
q = opencl.queue_for(dev)
caps = opencl_rowops.runnable_caps(q)
print(f"device: {dev.name}")
for op in ("quantize_int8", "absmax_scale"):
    for shape in [(125000, 128), (500000, 32), (250000, 64)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xd = cla.to_device(q, x)
        other = "none" if sys.argv[2:] == ["walk"] else "registers"
        cases = {other: RowForce(cache=other), "default": None}
        plan = plan_row(caps, RowProblem(op, *shape, "float32"))
        res = {name: [] for name in cases}
        for rnd in range(3):
            for name in (list(cases) if rnd % 2 == 0 else list(cases)[::-1]):
                fn = getattr(rowops, op)
                fn(xd, force=cases[name])
                q.finish()
                ts = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    fn(xd, force=cases[name])
                    q.finish()
                    ts.append(time.perf_counter() - t0)
                res[name].append(min(ts) * 1e3)
        a = getattr(rowops, op)(xd, force=cases[other])
        b = getattr(rowops, op)(xd)
        same = all(np.array_equal(u.get(), v.get()) for u, v in zip(a, b))
        print(f"{op:13s} {shape[0]:6d}x{shape[1]:<4d} {other} {'/'.join(f'{t:.1f}' for t in res[other])} ms"
              f" | default (cache {plan.cache}) {'/'.join(f'{t:.1f}' for t in res['default'])} ms | same bits {same}",
              flush=True)
