"""look-back variants: (wg, rounds, MIN_BLOCKS) on long rows, GPU time per public call."""
import time, sys
import cupy as cp
from clreduce import rowops, plan_rowops, fastpath
from clreduce.backends.cuda import rowops as cr
from clreduce.plan_rowops import RowForce
orig = cr.get_kernel
MB = [None]
PAUSE = [200]
def patched(dev, f, e, defines):
    d = tuple(defines)
    if dict(d).get("PHASE") == "2":
        if MB[0]:
            d = tuple(x for x in d if x[0] != "MIN_BLOCKS") + (("MIN_BLOCKS", str(MB[0])),)
        d = d + (("POLL_PAUSE_NS", str(PAUSE[0])),)
    return orig(dev, f, e, d)
cr.get_kernel = patched
def gpu_time(fn, n=10):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event(); s.record()
    for _ in range(n): fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / n
shapes = [(1, 1 << 28), (64, 1 << 22), (4096, 65536)]
combos = [(w, r, m, p) for (w, r, m) in ((256, 4, 4), (128, 8, 6), (128, 4, 8)) for p in (20, 100, 400, 1500)]
for dtype in ("float32", "float16"):
    for rows, k in shapes:
        x = cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dtype)
        out = cp.empty_like(x)
        copy = gpu_time(lambda: cp.copyto(out, x))
        line = [f"{dtype} {rows}x{k} copy {2 * x.nbytes / copy / 1e9:.0f}"]
        MB[0] = None; plan_rowops.LOOKBACK_ROUNDS = 4; cr._plans.clear(); fastpath.clear()
        t = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=RowForce(lookback=False)))
        line.append(f"nolb {2 * x.nbytes / t / 1e9:.0f}")
        for wg, rounds, mb, pause in combos:
            MB[0] = mb; PAUSE[0] = pause; plan_rowops.LOOKBACK_ROUNDS = rounds; cr._plans.clear(); fastpath.clear()
            t = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=RowForce(lookback=True, wg_size=wg)))
            line.append(f"wg{wg}r{rounds}mb{mb}p{pause} {2 * x.nbytes / t / 1e9:.0f}")
        print(" | ".join(line), flush=True)
