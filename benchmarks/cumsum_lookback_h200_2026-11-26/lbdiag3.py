"""look-back tile shapes on this GPU: (wg, rounds, MIN_BLOCKS), GPU time per public call."""
import cupy as cp
from clreduce import rowops, plan_rowops, fastpath
from clreduce.backends.cuda import rowops as cr
from clreduce.plan_rowops import RowForce
from lbtime import EXTRA, gpu_time
combos = {"float32": [(128, 8, 6), (128, 8, 7), (128, 8, 8), (64, 16, 12), (64, 16, 10), (256, 4, 4), (256, 4, 5), (128, 4, 10)],
          "float16": [(256, 4, 4), (256, 4, 5), (256, 4, 6), (128, 4, 8), (128, 4, 10), (128, 8, 5), (64, 8, 12), (64, 16, 6)]}
for dtype, items in (("float32", 4), ("float16", 8)):
    for rows, k in ((1, 1 << 28), (64, 1 << 22)):
        x = cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dtype)
        out = cp.empty_like(x)
        copy = gpu_time(lambda: cp.copyto(out, x))
        line = [f"{dtype} {rows}x{k} copy {2 * x.nbytes / copy / 1e9:.0f}"]
        EXTRA["MIN_BLOCKS"] = None; cr._plans.clear(); fastpath.clear()
        t = gpu_time(lambda: rowops.cumsum(x, axis=-1))
        line.append(f"plan {2 * x.nbytes / t / 1e9:.0f}")
        for wg, rounds, mb in combos[dtype]:
            EXTRA["MIN_BLOCKS"] = mb; plan_rowops.LOOKBACK_ACC_BYTES = rounds * items * 4; cr._plans.clear(); fastpath.clear()
            f = RowForce(lookback=True, wg_size=wg)
            t = gpu_time(lambda: rowops.cumsum(x, axis=-1, force=f))
            p, _ = cr.plan_for(0, plan_rowops.RowProblem("cumsum", rows, k, dtype), f)
            r = dict(p.passes[1].defines)["ROUNDS"]
            line.append(f"wg{wg}r{r}mb{mb} {2 * x.nbytes / t / 1e9:.0f}")
        plan_rowops.LOOKBACK_ACC_BYTES = 128
        print(" | ".join(line), flush=True)
