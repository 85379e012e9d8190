"""look-back variants: (wg, rounds, MIN_BLOCKS, poll pause) on long rows, GPU time per public call.

Ran against the tree of that day before LOOKBACK_ROUNDS became LOOKBACK_ACC_BYTES (see lbdiag3.py
for the form that runs on the tree that landed)."""
import cupy as cp
from clreduce import rowops, plan_rowops, fastpath
from clreduce.backends.cuda import rowops as cr
from clreduce.plan_rowops import RowForce
from lbtime import EXTRA, gpu_time
shapes = [(1, 1 << 28), (64, 1 << 22), (4096, 65536)]
combos = [(w, r, m, p) for (w, r, m) in ((256, 4, 4), (128, 8, 6), (128, 4, 8)) for p in (20, 100, 400, 1500)]
for dtype in ("float32", "float16"):
    for rows, k in shapes:
        x = cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dtype)
        out = cp.empty_like(x)
        copy = gpu_time(lambda: cp.copyto(out, x))
        line = [f"{dtype} {rows}x{k} copy {2 * x.nbytes / copy / 1e9:.0f}"]
        EXTRA.update(MIN_BLOCKS=None, POLL_PAUSE_NS=None); plan_rowops.LOOKBACK_ROUNDS = 4; cr._plans.clear(); fastpath.clear()
        t = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=RowForce(lookback=False)))
        line.append(f"nolb {2 * x.nbytes / t / 1e9:.0f}")
        for wg, rounds, mb, pause in combos:
            EXTRA.update(MIN_BLOCKS=mb, POLL_PAUSE_NS=pause); plan_rowops.LOOKBACK_ROUNDS = rounds; cr._plans.clear(); fastpath.clear()
            t = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=RowForce(lookback=True, wg_size=wg)))
            line.append(f"wg{wg}r{rounds}mb{mb}p{pause} {2 * x.nbytes / t / 1e9:.0f}")
        print(" | ".join(line), flush=True)
