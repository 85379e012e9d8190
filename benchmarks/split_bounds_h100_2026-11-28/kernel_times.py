"""Per-kernel device times of clreduce vs torch.compile on the issue-10 gap shapes."""
import sys, time, math, statistics
sys.path.insert(0, "tools")
import torch
import bench_rowops as br
import torch._dynamo
torch._dynamo.config.recompile_limit = 64
from torch.profiler import profile, ProfilerActivity
cases = [("rms_norm", "float16", (64, 4194304)), ("rms_norm", "float16", (1, 1 << 28)),
         ("rms_norm", "float32", (1, 1 << 28)), ("layer_norm", "float32", (1, 1 << 28)),
         ("softmax", "float32", (4096, 65536)), ("rms_norm", "float16", (65536, 4096)),
         ("layer_norm", "float16", (64, 4194304)), ("softmax", "float16", (64, 4194304)),
         ("softmax", "float16", (1, 1 << 28)), ("layer_norm", "float32", (4096, 65536))]
import os
TAG = os.environ.get("TAG", "new")
if len(sys.argv) > 1:
    cases = [c for c in cases if c[0] + c[1] + str(c[2][0]) in sys.argv[1:]] or cases
for op, dt, (rows, k) in cases:
    dtype = getattr(torch, dt)
    x = [torch.randn((rows, k), device="cuda", dtype=torch.float32).to(dtype) for _ in range(2)]
    peer, w = br.cuda_torch_op(op, k, dtype)
    ours = br.cuda_clreduce_op(op, w)
    comp = torch.compile(peer, dynamic=False)
    gb = 2 * rows * k * x[0].element_size() / 1e9
    for name, fn in (("ours", ours), ("compile", comp))[:1 if os.environ.get("NOCOMP") else 2]:
        name = TAG if name == "ours" else name
        fn(x[0]); fn(x[1]); torch.cuda.synchronize()
        ms = br.wall_ms(fn, x, 5)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(6):
                fn(x[i % 2])
            torch.cuda.synchronize()
        ks = {}
        evs = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
        per = max(1, len(evs) // 6)
        for i, e in enumerate(evs):
            ks.setdefault(f"[{i % per}] " + e.name[:60], []).append(e.device_time if hasattr(e, "device_time") else e.cuda_time)
        tot = sum(sum(v) for v in ks.values()) / 6
        print(f"{op} {dt} {rows}x{k} {name}: wall {ms*1e3:.0f} us ({gb/ms*1e3:.0f} GB/s), kernels {tot:.0f} us")
        for n, v in sorted(ks.items(), key=lambda kv: -sum(kv[1])):
            print(f"    {statistics.median(v):9.1f} us x{len(v)/6:.0f}  {n}")
    del x
    torch.cuda.empty_cache()
