"""The look-back with and without LB_AHEAD (row_scan.cl) on this GPU: GPU time per public
cumsum call on cupy arrays, GB/s of bytes read + written, per block shape. Run from this folder
with the repository on PYTHONPATH: python ahead.py."""
import os
import sys

import cupy as cp

from clreduce import fastpath, plan_rowops, rowops
from clreduce.backends.cuda import rowops as cuda_rowops

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cumsum_lookback_h200_2026-11-26"))
from lbtime import gpu_time  # noqa: E402

# a block per tile: (threads, share of an SM's threads); LB_AHEAD: (threads, share, runs per thread)
BLOCK = {"float32": [(128, 0.4375)], "float16": [(256, 0.5)]}
AHEAD = [(128, 0.375, 8), (128, 0.3125, 8), (128, 0.5, 4), (128, 0.625, 4), (256, 0.75, 4), (64, 0.25, 16)]
FLOAT, AHEAD0 = dict(plan_rowops.LOOKBACK_FLOAT), dict(plan_rowops.LOOKBACK_AHEAD)


def run(x, label):
    cuda_rowops._plans.clear()
    fastpath.clear()
    try:
        t = gpu_time(lambda: rowops.cumsum(x, axis=-1))
    except Exception as exc:  # a shape that does not fit
        return f"{label} {type(exc).__name__}"
    p, _ = cuda_rowops.plan_for(0, plan_rowops.RowProblem("cumsum", *x.shape, str(x.dtype)), None)
    d = dict(p.passes[-1].defines)
    return (f"wg{d['WG_SIZE']}mb{d.get('MIN_BLOCKS', 1)}r{d['ROUNDS']}a{d.get('LB_AHEAD', 0)} "
            f"{2 * x.nbytes / t / 1e9:.0f}")


for dtype in ("float32", "float16"):
    size = 4 if dtype == "float32" else 2
    for rows, k in ((1, 1 << 28), (64, 1 << 22)):
        x = cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dtype)
        out = cp.empty_like(x)
        copy = gpu_time(lambda: cp.copyto(out, x))
        line = [f"{dtype} {rows}x{k} copy {2 * x.nbytes / copy / 1e9:.0f}", run(x, "plan")]
        for wg, share in BLOCK[dtype]:
            plan_rowops.LOOKBACK_AHEAD[size] = None
            plan_rowops.LOOKBACK_FLOAT[size] = (wg, share)
            line.append(run(x, f"block wg{wg}"))
        for shape in AHEAD:
            plan_rowops.LOOKBACK_AHEAD[size] = shape
            line.append(run(x, f"ahead {shape}"))
        plan_rowops.LOOKBACK_FLOAT.update(FLOAT)
        plan_rowops.LOOKBACK_AHEAD.update(AHEAD0)
        print(" | ".join(line), flush=True)
