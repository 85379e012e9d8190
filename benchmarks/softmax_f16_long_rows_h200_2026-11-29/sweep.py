"""H200 probes, wall time of the public call on torch tensors, GB/s r+w (median of 7 x 10 calls).
1. split norm rows: FLAT_WRITE (the H100's rule for one row) against the chunk walk.
2. float16 softmax / log_softmax 4096 x 65536: the plan against forced groups, splits, walk back."""
import statistics, sys, time
import torch
import torch.nn.functional as F
import clreduce
import clreduce.plan_rowops as pr
from clreduce.plan_rowops import RowForce

def wall(fn, n=7, calls=10):
    fn(); torch.cuda.synchronize()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return statistics.median(out)

def gbs(nb, fn):
    try:
        return f"{nb / wall(fn) / 1e9:.0f}"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:80]}"

part = sys.argv[1]
if part in ("norms", "all"):
    for rnd in (1, 2):
        for dt in (torch.float16, torch.float32):
            for R, K in ((1, 1 << 28), (64, 1 << 22)):
                x = torch.randn(R, K, device="cuda", dtype=dt)
                w = torch.randn(K, device="cuda", dtype=dt)
                b = torch.randn(K, device="cuda", dtype=dt)
                o = torch.empty_like(x)
                nb = 2 * x.numel() * x.element_size()
                line = []
                for op in ("rms_norm", "layer_norm"):
                    args = (w,) if op == "rms_norm" else (w, b)
                    fn = getattr(clreduce, op)
                    for fw in (None, True, False):
                        line.append(f"{op} flat={fw} " + gbs(nb, lambda: fn(x, *args, out=o, force=None if fw is None else RowForce(flat_write=fw))))
                    if op == "rms_norm":
                        line.append("torch " + gbs(nb, lambda: F.rms_norm(x, (K,), w)))
                    else:
                        line.append("torch " + gbs(nb, lambda: F.layer_norm(x, (K,), w, b)))
                print(rnd, str(dt)[6:], f"{R}x{K}", " | ".join(line), flush=True)
                del x, w, b, o
if part in ("softmax", "all"):
    real_wb = pr.cuda_walk_back
    for rnd in (1, 2):
        for dt in (torch.float16,):
            R, K = 4096, 65536
            x = torch.randn(R, K, device="cuda", dtype=dt)
            o = torch.empty_like(x)
            nb = 2 * x.numel() * x.element_size()
            for op in ("softmax", "log_softmax"):
                fn = getattr(clreduce, op)
                line = []
                forces = [None] + [RowForce(cache="none", split=s, wg_size=wg, lanes=wg) for s in (1, 2) for wg in (256, 512, 1024)]
                forces += [RowForce(cache="registers", wg_size=1024, lanes=1024)]
                for wb in (False, True):
                    pr.cuda_walk_back = (lambda *a, **k: True) if wb else real_wb
                    for force in forces:
                        if wb and force is not None and force.cache == "registers":
                            continue
                        tag = "plan" if force is None else f"{force.cache[0]}s{force.split}w{force.wg_size}"
                        line.append(f"{'wb ' if wb else ''}{tag} " + gbs(nb, lambda: fn(x, out=o, force=force)))
                pr.cuda_walk_back = real_wb
                tf = torch.softmax if op == "softmax" else torch.log_softmax
                line.append("torch " + gbs(nb, lambda: tf(x, -1)))
                print(rnd, op, str(dt)[6:], f"{R}x{K}", " | ".join(line), flush=True)
