"""Host-only us a call of the public row ops on torch tensors (GPU held by a _sleep; best and
median of 15 loops of 200 calls) and back-to-back us a call on inputs rotated over 512 MB
((400 calls + synchronize) / 400, min/median of 7), for the tree on sys.path[0]."""
import statistics, sys, time, math
sys.path.insert(0, sys.argv[1])
import torch
import torch.nn.functional as F
import clreduce
assert clreduce.__file__.startswith(sys.argv[1]), clreduce.__file__

def host(fn, x, calls=200, loops=15):
    fn(x); torch.cuda.synchronize()
    out = []
    for _ in range(loops):
        torch.cuda._sleep(int(4e7))
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(x)
        out.append((time.perf_counter_ns() - t0) / calls / 1000)
        torch.cuda.synchronize()
    return out

def batches(fn, inputs, calls=400, loops=7):
    n = len(inputs)
    for i in range(8):
        fn(inputs[i % n])
    torch.cuda.synchronize()
    out = []
    for _ in range(loops):
        t0 = time.perf_counter_ns()
        for i in range(calls):
            fn(inputs[i % n])
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t0) / calls / 1000)
    return out

fmt = lambda v: f"{min(v):5.2f}/{statistics.median(v):5.2f}"
tag = sys.argv[2]
for R, K in ((1, 128), (8192, 1000)):
    for dt in (torch.float16, torch.float32):
        size = R * K * (2 if dt == torch.float16 else 4)
        copies = max(2, math.ceil((512 << 20) / size))
        base = torch.randn(R, K, device="cuda")
        inputs = [(base + 0.001 * i).to(dt) for i in range(copies)]
        w = torch.randn(K, device="cuda", dtype=dt)
        b = torch.randn(K, device="cuda", dtype=dt)
        for op in ("softmax", "log_softmax", "rms_norm", "layer_norm", "cumsum"):
            fn = getattr(clreduce, op)
            ours = {"rms_norm": lambda t: fn(t, w), "layer_norm": lambda t: fn(t, w, b),
                    "cumsum": lambda t: fn(t, axis=-1)}.get(op, fn)
            h = host(ours, inputs[0])
            line = f"{tag} {op:11s} {str(dt)[6:]:7s} {R}x{K} host {fmt(h)}"
            if R > 1:
                line += f" batches {fmt(batches(ours, inputs))} ({2 * size / statistics.median(batches(ours, inputs)) / 1e3:.0f} GB/s)"
            print(line, flush=True)
        del inputs, base
        torch.cuda.empty_cache()
