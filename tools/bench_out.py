"""Row ops with out= against a new result: public call on CUDA torch tensors, GB/s read + written.

Usage: python3 tools/bench_out.py TAG  (TAG labels the lines; run it once per tree to compare).
"""
import statistics, sys, time
import torch
import clreduce

def wall(fn, n=7, calls=None):
    fn(); torch.cuda.synchronize()
    t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
    est = time.perf_counter() - t0
    calls = calls or max(3, min(2000, int(0.02 / max(est, 1e-6))))
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return statistics.median(out)

tag = sys.argv[1]
for op, dt, R, K in [("rms_norm", torch.float16, 64, 4194304), ("softmax", torch.float32, 4096, 65536),
                     ("layer_norm", torch.float16, 65536, 4096), ("softmax", torch.float16, 1, 128),
                     ("rms_norm", torch.float32, 8192, 1000), ("cumsum", torch.float32, 65536, 4096)]:
    x = torch.randn(R, K, device="cuda", dtype=dt)
    o = torch.empty_like(x)
    w = torch.ones(K, device="cuda", dtype=dt) if op in ("rms_norm", "layer_norm") else None
    f = getattr(clreduce, op)
    if op == "cumsum":
        a, b = (lambda: f(x, axis=-1)), (lambda: f(x, axis=-1, out=o))
    elif w is None:
        a, b = (lambda: f(x)), (lambda: f(x, out=o))
    else:
        a, b = (lambda: f(x, w)), (lambda: f(x, w, out=o))
    nb = 2 * x.numel() * x.element_size()
    ta, tb, ta2, tb2 = wall(a), wall(b), wall(a), wall(b)
    ok = torch.equal(a(), b())
    print(f"{tag:5s} {op:10s} {str(dt)[6:]:8s} {R}x{K}: new result {nb/min(ta,ta2)/1e9:7.0f} GB/s {min(ta,ta2)*1e6:8.1f} us | "
          f"out= {nb/min(tb,tb2)/1e9:7.0f} GB/s {min(tb,tb2)*1e6:8.1f} us  equal={ok}", flush=True)
    del x, o
    torch.cuda.empty_cache()
