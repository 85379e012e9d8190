"""Host-only us a call of learned public reductions (GPU held by a _sleep; min/median of 15
loops of 200 calls) and back-to-back us a call on 8192x1000 inputs rotated over 512 MB
((400 calls + synchronize) / 400, min/median of 7), cupy and torch inputs, torch.mean beside,
for the tree on sys.path[0]."""
import statistics, sys, time, math
sys.path.insert(0, sys.argv[1])
import torch, cupy
import clreduce
assert clreduce.__file__.startswith(sys.argv[1]), clreduce.__file__

def host(fn, x, calls=200, loops=15):
    fn(x); fn(x); torch.cuda.synchronize()
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
    torch.cuda.synchronize(); cupy.cuda.Device().synchronize()
    out = []
    for _ in range(loops):
        t0 = time.perf_counter_ns()
        for i in range(calls):
            fn(inputs[i % n])
        torch.cuda.synchronize(); cupy.cuda.Device().synchronize()
        out.append((time.perf_counter_ns() - t0) / calls / 1000)
    return out

fmt = lambda v: f"{min(v):5.2f}/{statistics.median(v):5.2f}"
tag = sys.argv[2]
for R, K in ((1, 128), (8192, 1000)):
    for dt in (torch.float16, torch.float32):
        size = R * K * (2 if dt == torch.float16 else 4)
        copies = max(2, math.ceil((512 << 20) / size)) if R > 1 else 2
        base = torch.randn(R, K, device="cuda")
        inputs = [(base + 0.001 * i).to(dt) for i in range(copies)]
        cinputs = [cupy.asarray(t) for t in inputs]
        cases = [("mean", "torch", lambda t: clreduce.mean(t, axis=-1), inputs),
                 ("mean", "cupy", lambda t: clreduce.mean(t, axis=-1), cinputs),
                 ("sum", "torch", lambda t: clreduce.sum(t, axis=-1), inputs),
                 ("max", "cupy", lambda t: clreduce.max(t, axis=-1), cinputs),
                 ("argmax", "torch", lambda t: clreduce.argmax(t, axis=-1), inputs),
                 ("torch.mean", "torch", lambda t: torch.mean(t, -1), inputs),
                 ("cupy.mean", "cupy", lambda t: cupy.mean(t, -1), cinputs)]
        for name, kind, fn, ins in cases:
            h = host(fn, ins[0])
            line = f"{tag} {name:10s} {kind:5s} {str(dt)[6:]:7s} {R}x{K} host {fmt(h)}"
            if R > 1:
                b = batches(fn, ins)
                line += f" batches {fmt(b)} ({size / statistics.median(b) / 1e3:.0f} GB/s read)"
            print(line, flush=True)
        del inputs, cinputs, base
        torch.cuda.empty_cache(); cupy.get_default_memory_pool().free_all_blocks()
