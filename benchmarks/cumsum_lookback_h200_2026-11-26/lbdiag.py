"""look-back diagnostics: GPU time per public call (cupy events over N back-to-back calls) for
the planner's choice and forced variants, beside cupy.cumsum (CUB) and a copy."""
import sys, time
import numpy as np, cupy as cp
from clreduce import rowops, plan_rowops
from clreduce.backends.cuda import rowops as cr
from clreduce.plan_rowops import RowForce

def gpu_time(fn, n=10):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / n, (time.perf_counter() - t0) / n

shapes = [(1, 1 << 28), (64, 1 << 22), (4096, 65536), (65536, 4096)]
for dtype in ("float32", "float16"):
    for rows, k in shapes:
        x = cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dtype)
        nbytes = 2 * x.nbytes
        out = cp.empty_like(x)
        res = {}
        res["copy"] = gpu_time(lambda: cp.copyto(out, x))[0]
        try:
            res["cupy.cumsum"] = gpu_time(lambda: cp.cumsum(x, axis=-1))[0]
        except Exception as exc:
            res["cupy.cumsum"] = float("nan")
        variants = [("plan", None, 4), ("nolb", RowForce(lookback=False), 4),
                    ("wg128 r8", RowForce(lookback=True, wg_size=128), 8),
                    ("wg128 r4", RowForce(lookback=True, wg_size=128, sg_size=32), 4),
                    ("wg64 r16", RowForce(lookback=True, wg_size=64), 16),
                    ("wg512 r2", RowForce(lookback=True, wg_size=512), 2),
                    ("wg256 r2", RowForce(lookback=True, wg_size=256, sg_size=32), 2)]
        for name, f, rounds in variants:
            plan_rowops.LOOKBACK_ROUNDS = rounds; cr._plans.clear()
            try:
                t, w = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=f))
                p, _ = cr.plan_for(0, plan_rowops.RowProblem("cumsum", rows, k, dtype), f)
                res[name] = t
                extra = f" tile{p.lookback_tile} wg{p.wg_size} split{p.split}"
            except Exception as exc:
                res[name] = float("nan"); extra = f" {type(exc).__name__}: {exc}"[:120]
            print(f"{dtype} {rows}x{k} {name:12s} {nbytes / res[name] / 1e9:7.0f} GB/s  wall/call {w*1e6:8.0f} us{extra}", flush=True)
        print(f"{dtype} {rows}x{k} copy {nbytes / res['copy'] / 1e9:7.0f} GB/s  cupy.cumsum {nbytes / res['cupy.cumsum'] / 1e9:7.0f} GB/s", flush=True)
