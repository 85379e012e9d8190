import numpy as np, cupy as cp, clreduce
NUMPY_SLACK_ULP = 2.0
bad = 0
for strategy in (None, "rows_per_sg", "sg_per_row", "wg_per_row"):
    for offset in (0.0, 1000.0, 30000.0):
        for k in (128, 512, 4096):
            rng = np.random.default_rng(5)
            x = (offset + 4 * rng.standard_normal((256, k))).astype(np.float16)
            force = None if strategy is None else {"strategy": strategy, "vec": 8}
            got = cp.asnumpy(clreduce.var(cp.asarray(x), axis=-1, dtype=np.float32, force=force))
            ref = np.var(x.astype(np.longdouble), axis=-1).astype(np.float64)
            npg = np.var(x.astype(np.float32), axis=-1).astype(np.float64)
            ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
            err = (np.abs(got - ref) / ulp).max(); nerr = (np.abs(npg - ref) / ulp).max()
            ok = err <= nerr + NUMPY_SLACK_ULP
            bad += not ok
            print(f"{str(strategy):12s} offset {offset:7.0f} k {k:5d}: {err:6.2f} ulp, numpy {nerr:6.2f} {'ok' if ok else 'FAIL'}")
print("FAILURES", bad)
