"""Long rows on CUDA: forced shapes and a patched groups-per-SM cap (experiment)."""
import sys, itertools
import cupy as cp
import clreduce
from clreduce import plan_rowops as pr, fastpath
from clreduce.backends.cuda import rowops as cr


def gpu_time(fn, n=10):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(n):
        fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / n


def reset(groups):
    pr.GPU_GROUPS_PER_CU = groups
    cr._plans.clear()
    fastpath.clear()


cases = sys.argv[1].split(";")
ops = sys.argv[2].split(",")
dtypes = sys.argv[3].split(",")
for dtype in dtypes:
    for case in cases:
        shape_s, *variants = case.split("|")
        shape = tuple(int(v) for v in shape_s.split("x"))
        x = cp.random.standard_normal(shape, dtype=cp.float32).astype(dtype)
        out = cp.empty_like(x)
        copy = gpu_time(lambda: cp.copyto(out, x))
        print(f"{dtype} {shape_s} copy {2 * x.nbytes / copy / 1e9:.0f}", flush=True)
        for op in ops:
            fn = getattr(clreduce, op)
            ref = None
            for v in variants or ["-"]:
                force, groups = {}, 64
                if v != "-":
                    for kv in v.split(","):
                        k, val = kv.split("=")
                        if k == "groups":
                            groups = int(val)
                        elif k == "cache":
                            force[k] = val
                        else:
                            force[k] = int(val)
                reset(groups)
                try:
                    y = fn(x, axis=-1, force=force) if op in ("softmax", "log_softmax") else fn(x, force=force)
                    if ref is None:
                        ref = y
                    err = float(cp.max(cp.abs(y.astype(cp.float32) - ref.astype(cp.float32))))
                    ts = sorted(gpu_time(lambda: fn(x, axis=-1, force=force) if op in ("softmax", "log_softmax") else fn(x, force=force)) for _ in range(3))
                    print(f"  {op:10s} {v:40s} {2 * x.nbytes / ts[1] / 1e9:6.0f} GB/s  diff {err:.2g}", flush=True)
                except Exception as exc:  # noqa
                    print(f"  {op:10s} {v:40s} failed: {type(exc).__name__}: {str(exc)[:150]}", flush=True)
        del x, out
reset(64)
