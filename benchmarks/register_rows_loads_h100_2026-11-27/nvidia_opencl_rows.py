"""Row ops on NVIDIA's OpenCL: public call on pyopencl arrays, GB/s (read + written), and the
max error against a float64 numpy reference.

    OCL_ICD_VENDORS=/tmp/nvicd TAG=new PYTHONPATH=<tree> python nvidia_opencl_rows.py \
        softmax:65536x4096:float16 rms_norm:32768x8192:float32
"""
import sys, time, os
import numpy as np
import pyopencl as cl, pyopencl.array as cla
import clreduce
dev = [d for p in cl.get_platforms() for d in p.get_devices()][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
tag = os.environ.get("TAG", "?")
for spec in sys.argv[1:]:
    op, shp, dt = spec.split(":")
    R, K = map(int, shp.split("x"))
    rng = np.random.default_rng(0)
    hs = [(rng.standard_normal((R, K), np.float32) * 3).astype(dt) for _ in range(2)]
    xs = [cla.to_device(q, h) for h in hs]
    w = cla.to_device(q, rng.standard_normal(K).astype(dt))
    f = (lambda x: getattr(clreduce, op)(x, w)) if op.endswith("norm") else (lambda x: getattr(clreduce, op)(x))
    y = f(xs[0]).get().astype(np.float64)
    h = hs[0].astype(np.float64)
    if op == "softmax":
        e = np.exp(h - h.max(-1, keepdims=True)); ref = e / e.sum(-1, keepdims=True)
    elif op == "rms_norm":
        ref = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * w.get().astype(np.float64)
    else:
        ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * w.get().astype(np.float64)
    err = float(np.abs(y - ref).max())
    nb = 2 * hs[0].nbytes
    reps = max(10, int(4e9 / nb))
    for _ in range(3): f(xs[0])
    q.finish()
    ts = []
    for b in range(7):
        t = time.perf_counter()
        for i in range(reps): f(xs[i % 2])
        q.finish()
        ts.append((time.perf_counter() - t) / reps)
    print(f"{tag} {spec}: {nb / sorted(ts)[3] / 1e9:.0f} GB/s err {err:.2g}", flush=True)
