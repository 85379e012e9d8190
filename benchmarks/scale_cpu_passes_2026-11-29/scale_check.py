import numpy as np, clreduce, sys
dev = sys.argv[1]
rng = np.random.default_rng(5)
for rows, k in [tuple(map(int, a.split("x"))) for a in sys.argv[2].split(",")]:
    for dt in (np.float32, np.float16, np.float64):
        x = (rng.standard_normal((rows, k)) * 50).astype(dt)
        x[0, 0] = 0.5 * 50 / 127 * 3 if k > 1 else x[0, 0]  # half-way-ish values
        if rows > 2:
            x[1] = 0
            x[2, k // 2] = np.nan
        y, amax = clreduce.absmax_scale(x, device=dev)
        xd = x.astype(np.float64)
        am = np.abs(xd).max(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = np.where(am[:, None] == 0, 0, xd / am[:, None])
        ok1 = np.allclose(y.astype(np.float64), want, rtol=2e-3 if dt == np.float16 else 1e-6, atol=1e-7, equal_nan=True)
        ok2 = np.allclose(amax, am, equal_nan=True)
        q, sc = clreduce.quantize_int8(x, device=dev)
        s = am / 127
        with np.errstate(invalid="ignore", divide="ignore"):
            yq = xd / s[:, None] if dt == np.float64 else (x.astype(np.float32) / s.astype(np.float32)[:, None])
        wq = np.where(np.isfinite(yq), np.clip(np.rint(yq), -127, 127), 0).astype(np.int8)
        ok3 = (q == wq).mean()
        print(rows, k, np.dtype(dt).name, ok1, ok2, f"quant agree {ok3:.6f}", q.dtype, y.dtype)
