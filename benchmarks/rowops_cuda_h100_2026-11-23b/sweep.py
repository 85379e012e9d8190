"""rowops3 sweep: GPU groups per SM x vector runs per lane, kernel-event and public-call GB/s."""
import itertools, statistics, sys, time
import cupy, torch, clreduce
from clreduce import plan_rowops
from clreduce.backends.cuda import rowops as cr
from clreduce.plan_rowops import RowProblem

CASES = [("rms_norm", "float16", 648720, 128), ("rms_norm", "float16", 442368, 128), ("softmax", "float16", 442368, 128),
         ("layer_norm", "float16", 442368, 128), ("rms_norm", "float16", 1048576, 32), ("softmax", "float16", 1048576, 32),
         ("softmax", "float32", 1048576, 32), ("layer_norm", "float16", 65536, 4096), ("softmax", "float16", 8192, 1000)]
CONFIGS = [(64, 1), (64, 2), (1 << 22, 1), (1 << 22, 2), (16, 1), (1 << 22, 4)]

def ev_ms(fn, n=20):
    fn(); torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(3):
        a.record()
        for _ in range(n):
            fn()
        b.record(); torch.cuda.synchronize(); out.append(a.elapsed_time(b) / n)
    return min(out)

for op, dt, rows, k in CASES:
    x = torch.randn(rows, k, device="cuda").to(getattr(torch, dt))
    w = torch.ones(k, device="cuda", dtype=x.dtype)
    xc = cupy.from_dlpack(x)
    gb = 2 * x.numel() * x.element_size() / 1e9
    fn = getattr(clreduce, op)
    pub = (lambda: fn(x, w)) if "norm" in op else (lambda: fn(x))
    copy = torch.empty_like(x)
    cp = ev_ms(lambda: copy.copy_(x))
    line = []
    for gpc, rpl in CONFIGS:
        plan_rowops.GPU_GROUPS_PER_CU, plan_rowops.VEC_RUNS_PER_LANE = gpc, rpl
        cr._plans.clear()
        try:
            prob = RowProblem(op, rows, k, dt, weight="norm" in op)
            p, _ = cr.plan_for(0, prob)
            kw = {"weight": cupy.from_dlpack(w.float())} if "norm" in op else {}
            kt = ev_ms(lambda: cr.run(prob, xc, **kw))
            pt = ev_ms(pub)
            line.append(f"g{gpc if gpc < 1e5 else 'all'}/r{rpl} L{p.lanes} grid{p.global_size // p.wg_size}: k{gb / kt * 1e3:5.0f} p{gb / pt * 1e3:5.0f}")
        except Exception as e:
            line.append(f"g{gpc}/r{rpl}: {type(e).__name__} {str(e)[:80]}")
    print(f"{op:10s} {dt:8s} {rows}x{k} copy {gb / cp * 1e3:5.0f} | " + " | ".join(line), flush=True)
    del x, xc, copy
