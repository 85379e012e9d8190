"""A/B of the uncached row walk on a CPU OpenCL device, in one process, interleaved rounds:
element loads (RowForce(cache="none", vec=1), the plan before issue 10's long-row work) against
64-byte runs (vec=16, the plan now), beside numpy's formula and torch (2 threads).
GB/s = (bytes read + written) / median time of the call on device-resident pyopencl arrays.

    python ab.py 16384x1024 softmax,rms_norm,layer_norm intel [rounds]
"""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clreduce import rowops
from clreduce.plan_rowops import RowForce

shape = tuple(int(v) for v in sys.argv[1].split("x"))
ops = sys.argv[2].split(",")
dev = sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 7
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
w = np.ones(shape[1], np.float32)
d = [dd for p in cl.get_platforms() for dd in p.get_devices()
     if dev in p.name.lower() or (dev == "pocl" and "portable" in p.name.lower())][0]
ctx = cl.Context([d])
q = cl.CommandQueue(ctx)
xd, wd = cla.to_device(q, x), cla.to_device(q, w)
try:
    import torch
    torch.set_num_threads(2)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
except ImportError:
    torch = None
variants = {"vec1": RowForce(cache="none", vec=1), "vec16": RowForce(cache="none", vec=16)}


def numpy_f(op):
    if op == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    if op == "rms_norm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w


def torch_f(op):
    F = torch.nn.functional
    if op == "softmax":
        return torch.softmax(xt, -1)
    if op == "rms_norm":
        return F.rms_norm(xt, (shape[1],), wt, 1e-6)
    return F.layer_norm(xt, (shape[1],), wt, None, 1e-5)


for op in ops:
    f = getattr(rowops, op)

    def call(force):
        r = f(xd, wd, queue=q, force=force) if "norm" in op else f(xd, queue=q, force=force)
        q.finish()
        return r

    ref = numpy_f(op)
    runs = {k: (lambda v=v: call(v)) for k, v in variants.items()}
    runs["numpy"] = lambda: numpy_f(op)
    if torch is not None:
        runs["torch"] = lambda: torch_f(op)
    for k, v in variants.items():  # build, check
        err = float(np.max(np.abs(call(v).get() - ref)))
        assert err < 1e-4, (op, k, err)
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    nbytes = 2 * x.nbytes
    med = {k: float(np.median(t)) for k, t in times.items()}
    print(f"{op} {dev} {shape[0]}x{shape[1]} " + " ".join(
        f"{k}={nbytes / med[k] / 1e9:.2f}GB/s" for k in runs) + f" vec16/vec1 time={med['vec16'] / med['vec1']:.2f}",
        flush=True)
