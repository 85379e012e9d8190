"""float16 row ops, numpy in -> numpy out, beside torch (2 threads) on the same float16 arrays:
GB/s (read + written) from the best of 5 timed calls after a warm-up, per op and shape.
    python pub_f16.py DEVICE [TAG]   (PYTHONPATH picks the clreduce tree)"""
import os, sys, time
import numpy as np
import torch
import clreduce

torch.set_num_threads(2)
dev, tag = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
ops = {
    "softmax": (lambda x, w, b: clreduce.softmax(x, device=dev), lambda t, w, b: torch.softmax(t, -1)),
    "log_softmax": (lambda x, w, b: clreduce.log_softmax(x, device=dev), lambda t, w, b: torch.log_softmax(t, -1)),
    "rms_norm": (lambda x, w, b: clreduce.rms_norm(x, w, device=dev),
                 lambda t, w, b: torch.nn.functional.rms_norm(t, (t.shape[-1],), w, eps=1e-6)),
    "layer_norm": (lambda x, w, b: clreduce.layer_norm(x, w, b, device=dev),
                   lambda t, w, b: torch.nn.functional.layer_norm(t, (t.shape[-1],), w, b, eps=1e-5)),
}

def best(fn, n=5):
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)

rng = np.random.default_rng(0)
for shape in ((62500, 128), (8000, 1000), (122, 65536)):
    x = (rng.standard_normal(shape) * 3).astype(np.float16)
    w = rng.standard_normal(shape[-1]).astype(np.float16)
    b = rng.standard_normal(shape[-1]).astype(np.float16)
    tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
    nb = 2 * x.nbytes
    for name, (ours, theirs) in ops.items():
        a = best(lambda: ours(x, w, b))
        t = best(lambda: theirs(tx, tw, tb))
        print(f"{tag} {name:11s} {shape[0]}x{shape[1]:<6d} clreduce {nb / a / 1e9:6.2f} GB/s  torch {nb / t / 1e9:6.2f}",
              flush=True)
