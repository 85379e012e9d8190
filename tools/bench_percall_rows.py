"""Per-call cost of the public row ops on small arrays, fast path on and off, beside peers.

Rounds of ``--calls`` back-to-back calls, every path interleaved round by round in one
process (tools/bench_percall.py's ``interleaved``); median (and min) over ``--repeats``
rounds of wall time per call, in us. Ops: softmax, rms_norm (weight of the input's dtype),
layer_norm (weight and bias), cumsum (last axis); shapes ``--shapes`` (default 1x128,64x128).

OpenCL (default), per device: the op on a pyopencl array and on numpy (numpy in -> numpy
out), each also with ``CLREDUCE_FAST_PATH=0`` ("full"), and numpy's formula. Device-array
results are not waited on per call; each round ends with ``queue.finish()``.

    python tools/bench_percall_rows.py --device intel,pocl --calls 500 --repeats 5

CUDA (``--cuda``): the op on cupy arrays and CUDA torch tensors, fast and full, beside
torch's own op (``torch.softmax``, ``F.rms_norm``, ``F.layer_norm``, ``torch.cumsum``); each
round synchronises the device. Every clreduce case is first checked bit for bit against the
full path and must then be served without it.

    python tools/bench_percall_rows.py --cuda --calls 2000 --repeats 5 --json percall_rows.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (str(HERE.parent), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from bench_percall import emit, full_path, interleaved  # noqa: E402

import clreduce  # noqa: E402

OPS = ("softmax", "rms_norm", "layer_norm", "cumsum")


def _host(r):
    module = type(r).__module__.partition(".")[0]
    if module == "torch":
        return r.cpu().numpy()
    return r if isinstance(r, np.ndarray) else r.get()


def _call(op, w, b, **where):
    fn = getattr(clreduce, op)
    if op == "rms_norm":
        return lambda x: fn(x, w, **where)
    if op == "layer_norm":
        return lambda x: fn(x, w, b, **where)
    if op == "cumsum":
        return lambda x: fn(x, axis=-1, **where)
    return lambda x: fn(x, **where)


def checked(fn, name: str):
    """``fn`` after checking that a repeated call is served by the fast path and answers
    bit for bit as the full path."""
    from clreduce import rowops

    with full_path():
        slow = fn()
    fn()  # learns
    saved = dict(rowops._FULL)

    def refuse(*args, **kwargs):
        raise AssertionError(f"{name}: the fast path did not serve a repeated call")

    rowops._FULL.update({op: refuse for op in saved})
    try:
        fast = fn()
    finally:
        rowops._FULL.update(saved)
    s, f = _host(slow), _host(fast)
    if s.dtype != f.dtype or s.shape != f.shape or not np.array_equal(s, f, equal_nan=True):
        raise AssertionError(f"{name}: the fast path differs from the full path")
    return fn


def numpy_formula(op, w, b):
    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    table = {"softmax": softmax,
             "rms_norm": lambda x: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6) * w,
             "layer_norm": lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
             * w + b,
             "cumsum": lambda x: np.cumsum(x, -1)}
    return table[op]


def opencl_report(device: str, ops, shapes, calls: int, repeats: int) -> dict:
    import pyopencl.array as cla

    from clreduce.backends import opencl

    queue = opencl.queue_for(device)
    rows = {}
    for shape in shapes:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        w = np.random.default_rng(2).standard_normal(shape[-1]).astype(np.float32)
        b = np.random.default_rng(3).standard_normal(shape[-1]).astype(np.float32)
        d, dw, db = (cla.to_device(queue, a) for a in (x, w, b))
        bodies = {}
        for op in ops:
            on_device, on_host = _call(op, dw, db), _call(op, w, b, queue=queue)
            label = f"{op} {shape[0]}x{shape[1]}"
            bodies[f"{label} pyopencl"] = checked(lambda f=on_device: f(d), label)
            bodies[f"{label} pyopencl, full"] = (lambda f=on_device: f(d), full_path)
            numpy_in = checked(lambda f=on_host: f(x), label)
            bodies[f"{label} numpy"] = numpy_in
            bodies[f"{label} numpy, full"] = (numpy_in, full_path)
            bodies[f"{label} numpy formula"] = lambda f=numpy_formula(op, w, b): f(x)
        rows.update(interleaved(bodies, calls, repeats, queue.finish))
    return {"device": queue.device.name.strip(), "platform": queue.device.platform.name.strip(),
            "calls": calls, "repeats": repeats, "us_per_call": rows}


def cuda_report(ops, shapes, calls: int, repeats: int) -> dict:
    import cupy
    import torch
    import torch.nn.functional as F

    sync = cupy.cuda.Device().synchronize
    rows = {}
    for shape in shapes:
        k = shape[-1]
        host = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        hw = np.random.default_rng(2).standard_normal(k).astype(np.float32)
        hb = np.random.default_rng(3).standard_normal(k).astype(np.float32)
        c, cw, cb = (cupy.asarray(a) for a in (host, hw, hb))
        t, tw, tb = (torch.from_numpy(a).cuda() for a in (host, hw, hb))
        peers = {"softmax": lambda a: torch.softmax(a, -1), "rms_norm": lambda a: F.rms_norm(a, (k,), tw, eps=1e-6),
                 "layer_norm": lambda a: F.layer_norm(a, (k,), tw, tb, eps=1e-5),
                 "cumsum": lambda a: torch.cumsum(a, -1)}
        bodies = {}
        for op in ops:
            label = f"{op} {shape[0]}x{shape[1]}"
            on_cupy, on_torch = _call(op, cw, cb), _call(op, tw, tb)
            bodies[f"{label} cupy"] = checked(lambda f=on_cupy: f(c), f"{label} cupy")
            bodies[f"{label} cupy, full"] = (lambda f=on_cupy: f(c), full_path)
            bodies[f"{label} torch"] = checked(lambda f=on_torch: f(t), f"{label} torch")
            bodies[f"{label} torch, full"] = (lambda f=on_torch: f(t), full_path)
            bodies[f"{label} torch's own"] = lambda f=peers[op]: f(t)
        rows.update(interleaved(bodies, calls, repeats, sync))
    return {"gpu": cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode(),
            "torch": torch.__version__, "calls": calls, "repeats": repeats, "us_per_call": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="intel,pocl", help="OpenCL devices (selectors), comma-separated")
    ap.add_argument("--cuda", action="store_true", help="time the CUDA backend (cupy, torch) instead")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--shapes", default="1x128,64x128")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the report here")
    args = ap.parse_args(argv)
    ops = args.ops.split(",")
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if args.cuda:
        report = cuda_report(ops, shapes, args.calls, args.repeats)
    else:
        report = {"opencl": [opencl_report(d, ops, shapes, args.calls, args.repeats)
                             for d in args.device.split(",") if d]}
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
