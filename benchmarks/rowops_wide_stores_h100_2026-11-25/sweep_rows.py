"""Sweep forced row plans (lanes, wg, vec) and grid sizes (groups per SM) for the row ops on CUDA;
time the launch path (cuda rowops.run on cupy arrays) as back-to-back wall time."""
import dataclasses, json, sys, time, itertools
import numpy as np, cupy as cp
from clreduce.backends.cuda import rowops as R
from clreduce.plan_rowops import RowForce, RowProblem
from clreduce.plan import UnsupportedOnDevice

def timeit(fn, n=20, batches=3):
    fn(); cp.cuda.Device().synchronize()
    best = []
    for _ in range(batches):
        t = time.perf_counter()
        for i in range(n):
            fn(i)
        cp.cuda.Device().synchronize()
        best.append((time.perf_counter() - t) / n)
    return float(np.median(best))

def run_case(op, dtype, rows, k, forces, groups_list, results):
    nbytes = rows * k * np.dtype(dtype).itemsize
    nin = max(2, -(-512 * 2**20 // nbytes))
    xs = [cp.random.standard_normal((rows, k), dtype=np.float32).astype(dtype) for _ in range(nin)]
    half = dtype == "float16"
    w = cp.random.standard_normal(k, dtype=np.float32).astype(dtype) if op != "softmax" else None
    b = cp.random.standard_normal(k, dtype=np.float32).astype(dtype) if op == "layer_norm" else None
    pr = RowProblem(op, rows, k, dtype, weight=w is not None, bias=b is not None, params_half=half and w is not None)
    eps = 1e-6 if op == "rms_norm" else 1e-5
    outs = [cp.empty((rows, k), dtype) for _ in range(nin)]
    ref = None
    for f in forces:
        try:
            p, kernels = R.plan_for(0, pr, f)
        except (UnsupportedOnDevice, ValueError, Exception) as e:
            print(op, dtype, rows, k, f, "skip", type(e).__name__, str(e)[:80]); continue
        key = (0, pr, f)
        for g in groups_list:
            nteams_wg = p.wg_size // p.lanes
            need = -(-rows // nteams_wg)
            groups = need if g is None else min(need, 132 * g)
            pas = p.passes[0]
            p2 = dataclasses.replace(p, global_size=groups * p.wg_size,
                                     passes=(dataclasses.replace(pas, global_size=groups * pas.local_size),))
            R._plans.put(key, (p2, kernels))
            call = lambda i=0: R.run(pr, xs[i % nin], weight=w, bias=b, eps=eps, force=f, out=outs[i % nin])
            call(); cp.cuda.Device().synchronize()
            o = outs[0].astype(np.float32)
            if ref is None:
                ref = o
            err = float(cp.abs(o - ref).max())
            t = timeit(call)
            gbs = 2 * nbytes / t / 1e9
            r = dict(op=op, dtype=dtype, shape=f"{rows}x{k}", lanes=p.lanes, wg=p.wg_size, vec=p.vec, nper=p.nper,
                     sg=p.sg_mode, groups_per_sm=g, gbs=round(gbs, 1), err=err, planner=(f == forces[0] and g == groups_list[0]))
            results.append(r)
            print(json.dumps(r), flush=True)
    del xs, outs

def main():
    out = sys.argv[1]
    results = []
    x = cp.empty(512 << 20, np.uint8); y = cp.empty_like(x)
    t = timeit(lambda i=0: y.__setitem__(Ellipsis, x))
    print("copy GB/s", 2 * x.nbytes / t / 1e9)
    results.append(dict(copy_gbs=2 * x.nbytes / t / 1e9)); del x, y
    cases = [(o, d, r, k) for o in ("rms_norm", "softmax", "layer_norm")
             for (d, r, k) in (("float16", 648720, 128), ("float32", 442368, 128), ("float16", 8192, 1000), ("float32", 8192, 1000))]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    for op, d, r, k in cases:
        if only and op not in only: continue
        lanes_set = (4, 8, 16, 32) if k == 128 else (32, 64, 128, 256)
        forces = [None] + [RowForce(cache="registers", lanes=l, wg_size=wg) for l in lanes_set for wg in (256, 512)]
        run_case(op, d, r, k, forces, [64, None, 8, 16, 32], results)
        json.dump(results, open(out, "w"))

main()
