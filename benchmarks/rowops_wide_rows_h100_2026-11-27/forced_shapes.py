import sys, json, numpy as np, cupy as cp, torch
sys.path.insert(0, ".")
import clreduce
from clreduce import rowops

def timeit(fn, xs, reps=20):
    for x in xs[:2]: fn(x)
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for b in range(5):
        s.record()
        for i in range(reps): fn(xs[i % len(xs)])
        e.record(); e.synchronize()
        out.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return sorted(out)[2]

forces = [None, {"cache": "registers", "wg_size": 1024, "lanes": 1024}, {"cache": "registers", "wg_size": 512, "lanes": 512},
          {"cache": "none", "wg_size": 256, "lanes": 256}, {"cache": "none", "wg_size": 512, "lanes": 512}]
for op in ("softmax", "rms_norm"):
  for dt in ("float16", "float32"):
    for rows, k in ((8192, 32768), (16384, 16384), (4096, 65536)):
        n = max(2, (512 << 20) // (rows * k * np.dtype(dt).itemsize))
        xs = [cp.random.standard_normal((rows, k), dtype=cp.float32).astype(dt) for _ in range(min(n, 4))]
        ref = getattr(rowops, op)(xs[0])
        nbytes = 2 * rows * k * np.dtype(dt).itemsize
        line = f"{op:8s} {dt} {rows}x{k}:"
        for f in forces:
            try:
                got = getattr(rowops, op)(xs[0], force=f)
                err = float(cp.abs(got.astype(cp.float32) - ref.astype(cp.float32)).max())
                ms = timeit(lambda x: getattr(rowops, op)(x, force=f), xs)
                line += f"  {('default' if f is None else f['cache'][0] + str(f['wg_size']))}={nbytes / ms / 1e6:.0f}(e{err:.0e})"
            except Exception as exc:
                line += f"  {f}: {type(exc).__name__}:{str(exc)[:60]}"
        ts = [torch.as_tensor(x, device="cuda") for x in xs]
        tf = (lambda t: torch.softmax(t, -1)) if op == "softmax" else (lambda t: torch.nn.functional.rms_norm(t, (k,)))
        ms = timeit(tf, ts)
        line += f"  torch={nbytes / ms / 1e6:.0f}"
        print(line, flush=True)
