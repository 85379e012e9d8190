"""numpy in, numpy out= vs a new result: ms a call (median of 15) per tree (PYTHONPATH), one device."""
import numpy as np, time, sys, os, clreduce
dev = sys.argv[1]
res = []
for op, shape in (("softmax", (122, 65536)), ("softmax", (62500, 128)), ("rms_norm", (62500, 128)), ("layer_norm", (8000, 1000))):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    f = getattr(clreduce, op)
    o = np.empty_like(x)
    def t(g, n=15):
        g(); ts = []
        for _ in range(n):
            t0 = time.perf_counter(); g(); ts.append(time.perf_counter() - t0)
        return np.median(ts) * 1e3
    res.append(f"{op} {shape[0]}x{shape[1]} new {t(lambda: f(x, device=dev)):.1f} out= {t(lambda: f(x, out=o, device=dev)):.1f}")
print(" | ".join(res))
