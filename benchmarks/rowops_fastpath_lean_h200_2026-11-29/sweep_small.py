"""H200: row ops on small launches (under ~3 waves of one run a lane): the plan against
forced lanes. Wall time of the public call on torch tensors, back-to-back, GB/s r+w,
median of 9 x 20 calls; two rounds."""
import statistics, sys, time
import torch
import torch.nn.functional as F
import clreduce
from clreduce.plan_rowops import RowForce

def wall(fn, n=9, calls=20):
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
        return f"{nb / wall(fn) / 1e9:5.0f}"
    except Exception as exc:
        return f"{type(exc).__name__}"[:5]

shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
ops = sys.argv[2].split(",")
lanes_list = [int(v) for v in sys.argv[3].split(",")]
dts = [getattr(torch, d) for d in sys.argv[4].split(",")]
from clreduce.backends.cuda import rowops as cro
print("op dtype shape | plan(lanes) | " + " ".join(f"L{l:<4}" for l in lanes_list) + " | torch")
for rnd in (1, 2):
    for R, K in shapes:
        for dt in dts:
            x = torch.randn(R, K, device="cuda", dtype=dt)
            w = torch.randn(K, device="cuda", dtype=dt)
            b = torch.randn(K, device="cuda", dtype=dt)
            o = torch.empty_like(x)
            nb = 2 * x.numel() * x.element_size()
            for op in ops:
                fn = getattr(clreduce, op)
                args = {"rms_norm": (w,), "layer_norm": (w, b)}.get(op, ())
                peer = {"softmax": lambda: torch.softmax(x, -1), "log_softmax": lambda: torch.log_softmax(x, -1),
                        "rms_norm": lambda: F.rms_norm(x, (K,), w), "layer_norm": lambda: F.layer_norm(x, (K,), w, b)}[op]
                cells = [gbs(nb, lambda: fn(x, *args))]
                for lanes in lanes_list:
                    cells.append(gbs(nb, lambda: fn(x, *args, force=RowForce(lanes=lanes))))
                cells.append(gbs(nb, peer))
                print(rnd, op, str(dt)[6:], f"{R}x{K}", " ".join(cells), flush=True)
            del x, w, b, o
