"""softmax float32 4096x65536 on CUDA: the plan against forced group sizes and splits, with and
without WALK_BACK (argv[1] == 'nowb' patches it off); wall time of the public call, GB/s r+w."""
import statistics, sys, time
import torch
import clreduce
import clreduce.plan_rowops as pr
from clreduce.plan_rowops import RowForce
if len(sys.argv) > 1 and sys.argv[1] == "nowb":
    pr.cuda_walk_back = lambda *a, **k: False
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
for dt, R, K in ((torch.float32, 4096, 65536), (torch.float16, 4096, 65536), (torch.float32, 8192, 32768)):
    x = torch.randn(R, K, device="cuda", dtype=dt)
    o = torch.empty_like(x)
    nb = 2 * x.numel() * x.element_size()
    forces = [None] + [RowForce(cache="none", split=s, wg_size=w, lanes=w) for s in (1, 2) for w in (256, 512, 1024)]
    line = []
    for force in forces:
        try:
            t = wall(lambda: clreduce.softmax(x, out=o, force=force))
        except Exception as exc:
            line.append(f"{force}: {type(exc).__name__}"); continue
        tag = "plan" if force is None else f"s{force.split}w{force.wg_size}"
        line.append(f"{tag} {nb/t/1e9:.0f}")
    if sys.argv[-1] == "compile":
        f = torch.compile(lambda t: torch.softmax(t, -1))
        line.append(f"compile {nb/wall(lambda: f(x))/1e9:.0f}")
    print(sys.argv[1:], str(dt)[6:], f"{R}x{K}", " | ".join(line), flush=True)
