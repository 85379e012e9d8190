"""logcumsumexp accuracy on CUDA: long float32 rows at 1e4 + N(0,1), every plan the planner picks."""
import numpy as np, cupy as cp, torch, clreduce
rng = np.random.default_rng(7)
for shape in [(1, 10**6), (4, 2**20), (1, 2**24), (1024, 4097), (64, 65536)]:
    x = (1e4 + rng.standard_normal(shape)).astype(np.float32)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    got = clreduce.logcumsumexp(cp.asarray(x), axis=1).get().astype(np.float64)
    t = torch.logcumsumexp(torch.from_numpy(x).cuda(), 1).cpu().numpy().astype(np.float64)
    rel = lambda g: float((np.abs(g - want) / np.abs(want)).max())
    print(f"logcumsumexp {shape}: clreduce {rel(got):.2e}  torch {rel(t):.2e}", flush=True)
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    got = clreduce.logcumsumexp(cp.asarray(x), axis=1).get().astype(np.float64)
    print(f"   N(0,9) abs err {np.abs(got - want).max():.2e}", flush=True)
