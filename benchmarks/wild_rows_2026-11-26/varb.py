"""CUDA-event GB/s of var/std reductions (cupy input): varb.py SHAPES OPS DTYPES"""
import sys
import cupy as cp
import clreduce


def gpu_time(fn, n=20):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(n):
        fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / n


for shape_s in sys.argv[1].split(","):
    shape = tuple(int(v) for v in shape_s.split("x"))
    for dtype in sys.argv[3].split(","):
        x = cp.random.standard_normal(shape, dtype=cp.float32).astype(dtype)
        for op in sys.argv[2].split(","):
            for axis in (-1, 0):
                fn = lambda: getattr(clreduce, op)(x, axis=axis)
                ts = sorted(gpu_time(fn) for _ in range(5))
                print(f"{dtype} {shape_s} {op} {axis} {x.nbytes / ts[2] / 1e9:.0f}", flush=True)
        del x
