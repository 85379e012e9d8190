"""H200: the host side of a row op's public call on torch tensors, inputs rotated over 512 MB.
host: ns a call with the GPU held by a _sleep (the host runs ahead: no back-pressure), 15 loops
of 200 calls, min/median/max. batches: (400 back-to-back calls + synchronize) / 400, 15 batches,
min/median/max (tools/bench_rowops.py's measure, median of 3 there). Also with gc disabled."""
import gc, statistics, sys, time, math
import torch
import torch.nn.functional as F
import clreduce

def host(fn, inputs, calls=200, loops=15):
    n = len(inputs)
    fn(inputs[0]); torch.cuda.synchronize()
    out = []
    for _ in range(loops):
        torch.cuda._sleep(int(4e7))  # ~20 ms
        t0 = time.perf_counter_ns()
        for i in range(calls):
            fn(inputs[i % n])
        out.append((time.perf_counter_ns() - t0) / calls / 1000)
        torch.cuda.synchronize()
    return out

def batches(fn, inputs, calls=400, loops=15):
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

def fmt(v):
    return f"{min(v):5.1f}/{statistics.median(v):5.1f}/{max(v):5.1f}"

shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
ops = sys.argv[2].split(",")
for R, K in shapes:
    for dt in (torch.float16, torch.float32):
        size = R * K * (2 if dt == torch.float16 else 4)
        copies = max(2, math.ceil((512 << 20) / size))
        base = torch.randn(R, K, device="cuda")
        inputs = [(base + 0.001 * i).to(dt) for i in range(copies)]
        w = torch.ones(K, device="cuda", dtype=dt)
        for op in ops:
            fn = getattr(clreduce, op)
            args = {"rms_norm": (w,), "layer_norm": (w,)}.get(op, ())
            peer = {"softmax": lambda t: torch.softmax(t, -1), "log_softmax": lambda t: torch.log_softmax(t, -1),
                    "rms_norm": lambda t: F.rms_norm(t, (K,), w, eps=1e-6),
                    "layer_norm": lambda t: F.layer_norm(t, (K,), w, None, eps=1e-5)}[op]
            ours = lambda t: fn(t, *args)
            line = [f"host {fmt(host(ours, inputs))}", f"torch {fmt(host(peer, inputs))}",
                    f"| batches {fmt(batches(ours, inputs))}", f"torch {fmt(batches(peer, inputs))}"]
            gc.disable()
            line += [f"| nogc host {fmt(host(ours, inputs))}", f"batches {fmt(batches(ours, inputs))}"]
            gc.enable()
            print(op, str(dt)[6:], f"{R}x{K}", " ".join(line), flush=True)
        del inputs, base
        torch.cuda.empty_cache()
print("gc thresholds", gc.get_threshold(), "objects", len(gc.get_objects()))
