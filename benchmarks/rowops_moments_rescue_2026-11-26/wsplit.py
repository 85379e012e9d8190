"""Forced write-pass splits (PHASE 2's own chunks) of long rows with weight (+bias) on CUDA:
CUDA-event time, cupy input. Args: "RxK|ws|ws;..." ops dtypes; ws "-" = the planner's."""
import sys
import cupy as cp
import clreduce
from clreduce.backends.cuda import probe
from clreduce.plan_rowops import RowProblem, RowForce, plan_row


def gpu_time(fn, n=10):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(n):
        fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / n


caps = probe.probe_device(0)
for case in sys.argv[1].split(";"):
    shape_s, *splits = case.split("|")
    shape = tuple(int(v) for v in shape_s.split("x"))
    for dtype in sys.argv[3].split(","):
        x = cp.random.standard_normal(shape, dtype=cp.float32).astype(dtype)
        w = cp.random.standard_normal(shape[-1], dtype=cp.float32).astype(dtype)
        b = cp.random.standard_normal(shape[-1], dtype=cp.float32).astype(dtype)
        for op in sys.argv[2].split(","):
            args = {"softmax": (), "rms_norm": (w,), "layer_norm": (w, b)}[op]
            nbytes = 2 * x.nbytes + sum(a.nbytes for a in args)
            row = []
            for sp in splits:
                force = {} if sp == "-" else {"write_split": int(sp)}
                fn = lambda: getattr(clreduce, op)(x, *args, force=force)
                ts = sorted(gpu_time(fn) for _ in range(3))
                p = plan_row(caps, RowProblem(op, shape[0], shape[1], dtype, weight=bool(args), bias=len(args) > 1,
                                              params_half=dtype == "float16" and op != "softmax"), RowForce(**force))
                row.append(f"{sp}({p.split}/{p.write_split},{p.passes[-1].global_size // p.wg_size}g):"
                           f"{nbytes / ts[1] / 1e9:.0f}")
            print(f"{dtype} {shape_s} {op:10s} " + "  ".join(row), flush=True)
        del x
