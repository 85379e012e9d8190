"""Time the norm kernels of one tree (PYTHONPATH picks it) on the cuda launch path; forced lanes."""
import json, sys, time
import numpy as np, cupy as cp
from clreduce.backends.cuda import rowops as R
from clreduce.plan_rowops import RowForce, RowProblem

def timeit(fn, n=30, batches=5):
    fn(0); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(batches):
        t = time.perf_counter()
        for i in range(n):
            fn(i)
        cp.cuda.Device().synchronize()
        ts.append((time.perf_counter() - t) / n)
    return float(np.median(ts))

tag, out = sys.argv[1], sys.argv[2]
res = []
cases = [("layer_norm", "float16", 648720, 128), ("layer_norm", "float32", 442368, 128),
         ("rms_norm", "float16", 648720, 128), ("rms_norm", "float32", 442368, 128),
         ("softmax", "float16", 648720, 128), ("softmax", "float32", 442368, 128),
         ("layer_norm", "float16", 65536, 4096), ("rms_norm", "float16", 65536, 4096),
         ("softmax", "float16", 65536, 4096), ("softmax", "float32", 1048576, 32),
         ("layer_norm", "float32", 4096, 65536)]
for op, dt, rows, k in cases:
    nbytes = rows * k * np.dtype(dt).itemsize
    nin = max(2, -(-128 * 2**20 // nbytes))
    rs = cp.random.RandomState(1)
    xs = [(rs.standard_normal((rows, k), dtype=np.float32) * 3 + 5).astype(dt) for _ in range(nin)]
    w = rs.standard_normal(k, dtype=np.float32).astype(dt) if op != "softmax" else None
    b = rs.standard_normal(k, dtype=np.float32).astype(dt) if op == "layer_norm" else None
    pr = RowProblem(op, rows, k, dt, weight=w is not None, bias=b is not None, params_half=dt == "float16" and w is not None)
    eps = 1e-6 if op == "rms_norm" else 1e-5
    outs = [cp.empty((rows, k), dt) for _ in range(nin)]
    x32 = xs[0].astype(cp.float64)
    if op == "layer_norm":
        m = x32.mean(1, keepdims=True); v = x32.var(1, keepdims=True)
        ref = (x32 - m) / cp.sqrt(v + eps) * w.astype(cp.float64) + b.astype(cp.float64)
    elif op == "softmax":
        e = cp.exp(x32 - x32.max(1, keepdims=True)); ref = e / e.sum(1, keepdims=True)
    else:
        ref = x32 / cp.sqrt((x32 * x32).mean(1, keepdims=True) + eps) * w.astype(cp.float64)
    forces = [None] + ([RowForce(cache="registers", lanes=l, wg_size=256) for l in (16,)] if (op, dt, k) == ("layer_norm", "float16", 128) else [])
    for f in forces:
        call = lambda i=0: R.run(pr, xs[i % nin], weight=w, bias=b, eps=eps, force=f, out=outs[i % nin])
        try:
            p, _ = R.plan_for(0, pr, f)
            call(0); cp.cuda.Device().synchronize()
        except Exception as e:
            print(tag, op, dt, rows, k, f, "fail", repr(e)[:200]); continue
        err = float(cp.abs(outs[0].astype(cp.float64) - ref).max())
        t = timeit(call)
        r = dict(tree=tag, op=op, dtype=dt, shape=f"{rows}x{k}", lanes=p.lanes, nper=p.nper, forced=f is not None,
                 gbs=round(2 * nbytes / t / 1e9, 1), us=round(t * 1e6, 1), err=err)
        res.append(r); print(json.dumps(r), flush=True)
    del xs, outs
json.dump(res, open(out, "w"))
