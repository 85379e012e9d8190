"""argv op dtype rows k groups_per_cu wg(0=planner) -> GB/s of the public call (read+written), and vs copy"""
import sys, time, statistics
import torch, clreduce
from clreduce import plan_rowops
from clreduce.plan_rowops import RowForce
op, dtype, rows, k, gpc, wg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
if gpc:
    plan_rowops.GPU_GROUPS_PER_CU = gpc
t = getattr(torch, dtype)
xs = [torch.randn((rows, k), device="cuda").to(t) for _ in range(2)]
w = torch.ones(k, device="cuda", dtype=t) if op.endswith("norm") else None
fn = getattr(clreduce, op)
kw = {"weight": w} if w is not None else {}
force = RowForce(wg_size=wg) if wg else None
if force is not None:
    kw["force"] = force
ref = getattr(torch, "softmax")(xs[0].float(), -1) if op == "softmax" else None
y = fn(xs[0], axis=-1, **kw) if op in ("softmax", "log_softmax") else fn(xs[0], **kw)
if ref is not None:
    assert float((y.float() - ref).abs().max()) < 1e-3
def run(f):
    for i in range(3): f(i)
    torch.cuda.synchronize()
    per = []
    for b in range(5):
        t0 = time.perf_counter()
        for i in range(10): f(i)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / 10)
    return statistics.median(per)
if op in ("softmax", "log_softmax"):
    s = run(lambda i: fn(xs[i % 2], axis=-1, **kw))
else:
    s = run(lambda i: fn(xs[i % 2], **kw))
out = torch.empty_like(xs[0])
c = run(lambda i: out.copy_(xs[i % 2]))
gb = 2 * xs[0].numel() * xs[0].element_size() / 1e9
print(f"{op} {dtype} {rows}x{k} gpc={gpc} wg={wg}: {gb / s:6.0f} GB/s, copy {gb / c:6.0f}, {c / s:.3f} of copy", flush=True)
