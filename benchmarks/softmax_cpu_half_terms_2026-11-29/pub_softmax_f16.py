"""float16 softmax, numpy in -> numpy out, beside torch (2 threads) on the same arrays: GB/s
(read + written) of the best of 7 timed calls after a warm-up, per shape.
    python pub_softmax_f16.py DEVICE [TAG]   (PYTHONPATH picks the clreduce tree)"""
import sys, time
import numpy as np
import torch
import clreduce

torch.set_num_threads(2)
dev, tag = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")


def best(fn, n=7):
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


rng = np.random.default_rng(0)
for shape in ((62500, 128), (8000, 1000), (2000, 4096), (500, 16384), (122, 65536)):
    x = (rng.standard_normal(shape) * 3).astype(np.float16)
    tx = torch.from_numpy(x)
    nb = 2 * x.nbytes
    a = best(lambda: clreduce.softmax(x, device=dev))
    t = best(lambda: torch.softmax(tx, -1))
    print(f"{tag} softmax {shape[0]}x{shape[1]:<6d} clreduce {nb / a / 1e9:6.2f} GB/s  torch {nb / t / 1e9:6.2f}",
          flush=True)
