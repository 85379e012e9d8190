import sys, time, numpy as np, clreduce
dev, op = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
for spec in sys.argv[3].split(","):
    shape = tuple(int(v) for v in spec.split("x"))
    x = rng.standard_normal(shape).astype(np.float32)
    fn = lambda: getattr(clreduce, op)(x, device=dev)
    fn(); fn()
    ts = []
    for _ in range(15):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    nb = x.nbytes * (1 if op == "moments" else 2)
    print(f"{dev} {spec} {op} {nb / min(ts) / 1e9:.2f}")
