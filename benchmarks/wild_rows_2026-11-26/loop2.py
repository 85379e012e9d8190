import sys, numpy as np, clreduce
dev, op, spec, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
x = np.random.default_rng(0).standard_normal(tuple(int(v) for v in spec.split("x"))).astype(np.float32)
fn = (lambda: getattr(clreduce, op)(x, axis=-1, device=dev)) if op in ("var", "std") else (lambda: getattr(clreduce, op)(x, device=dev))
for _ in range(n): fn()
