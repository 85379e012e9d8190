"""Column reductions (axis=0) on cupy arrays: GB/s read of the public call, CUDA events around
batches of 10 calls, median of 7. argv: label. Run from a tree's root (PYTHONPATH)."""
import sys, statistics, hashlib
import cupy as cp, clreduce, numpy as np
label = sys.argv[1]
shapes = [(65536, 1024), (16384, 4096), (4096, 16384), (1048576, 32), (256, 262144)]
for dtype in ("float32", "float16"):
    for shape in shapes:
        x = cp.random.default_rng(0).standard_normal(shape, dtype=cp.float32).astype(dtype)
        for op in ("sum", "mean", "prod", "max"):
            f = getattr(clreduce, op)
            y = f(x, axis=0)
            h = hashlib.sha1(cp.asnumpy(y).tobytes()).hexdigest()[:10]
            xh = cp.asnumpy(x).astype(np.float64)
            ref = getattr(np, op)(xh, axis=0)
            got = cp.asnumpy(y).astype(np.float64)
            with np.errstate(all="ignore"):
                if op == "max":
                    ok = np.array_equal(got, ref)
                elif op == "prod":
                    r = ref.astype(dtype).astype(np.float64)
                    ok = bool(np.all((got == r) | np.isclose(got, r, rtol=1e-2, atol=0)))
                else:
                    scale = np.abs(xh).sum(axis=0) / (xh.shape[0] if op == "mean" else 1)
                    ok = bool(np.all(np.abs(got - ref) <= 1e-5 * scale + (np.abs(ref) * 1e-3 if dtype == "float16" else 0)))
            h += "" if ok else " WRONG"

            for _ in range(3):
                f(x, axis=0)
            per = []
            s, e = cp.cuda.Event(), cp.cuda.Event()
            for b in range(7):
                s.record()
                for _ in range(10):
                    f(x, axis=0)
                e.record(); e.synchronize()
                per.append(cp.cuda.get_elapsed_time(s, e) / 10 / 1e3)
            print(f"{label} {op:4s} {dtype} {shape[0]}x{shape[1]} {x.nbytes / statistics.median(per) / 1e9:7.0f} GB/s hash {h}", flush=True)
