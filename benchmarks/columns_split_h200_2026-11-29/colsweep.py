"""Column sums (axis=0) on cupy arrays with Force(split=S): GB/s read of the public call, CUDA
events around batches of 10 calls, median of 5; checks each result against the default's."""
import statistics, sys
import cupy as cp, numpy as np, clreduce
from clreduce.plan import Force
ops = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sum"]
shapes = [(1048576, 32), (262144, 128), (65536, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]
splits = [None, 1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
def timed(f):
    for _ in range(2):
        f()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    per = []
    for b in range(5):
        s.record()
        for _ in range(10):
            f()
        e.record(); e.synchronize()
        per.append(cp.cuda.get_elapsed_time(s, e) / 10 / 1e3)
    return statistics.median(per)
for op in ops:
  for dtype in ("float32", "float16"):
    for shape in shapes:
        x = cp.random.default_rng(0).standard_normal(shape, dtype=cp.float32).astype(dtype)
        fn = getattr(clreduce, op)
        ref = cp.asnumpy(fn(x, axis=0)).astype(np.float64)
        line = []
        for sp in splits:
            if sp is not None and sp > shape[0]:
                continue
            force = None if sp is None else Force(split=sp)
            y = cp.asnumpy(fn(x, axis=0, force=force)).astype(np.float64)
            ok = np.allclose(y, ref, rtol=1e-2 if dtype == "float16" else 1e-4, atol=1e-2 if dtype == "float16" else 1e-3)
            t = timed(lambda: fn(x, axis=0, force=force))
            line.append(f"{'dflt' if sp is None else sp}:{x.nbytes / t / 1e9:.0f}{'' if ok else '!'}")
        print(op, dtype, f"{shape[0]}x{shape[1]}", " ".join(line), flush=True)
    try:
        import torch
        for shape in shapes:
            t_ = torch.randn(shape, device="cuda").to(getattr(torch, dtype))
            tt = timed(lambda: {"sum": torch.sum, "max": torch.amax, "var": torch.var, "argmax": torch.argmax}[op](t_, 0))
            print("torch", op, dtype, f"{shape[0]}x{shape[1]}", f"{t_.numel() * t_.element_size() / tt / 1e9:.0f}", flush=True)
    except Exception as exc:
        print("torch:", exc)
