"""H200: row ops on inputs rotated over 512 MB (as tools/bench_rowops.py times them): public call
(back-to-back, best of 5 loops, us a call) and GPU-only time a call (a _sleep queued first so the
host runs ahead; CUDA events around 256 calls), the plan and forced lanes, beside torch."""
import sys, time, math
import torch
import torch.nn.functional as F
import clreduce
from clreduce.plan_rowops import RowForce

def per_call(fn, inputs, calls=2048, repeats=5):
    n = len(inputs)
    for i in range(64):
        fn(inputs[i % n])
    torch.cuda.synchronize()
    best = 1e18
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for i in range(calls):
            fn(inputs[i % n])
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best / 1000

def gpu_time(fn, inputs, calls=256):
    n = len(inputs)
    fn(inputs[0]); torch.cuda.synchronize()
    best = 1e18
    for _ in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(2e8))
        s.record()
        for i in range(calls):
            fn(inputs[i % n])
        e.record(); torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) * 1000 / calls)
    return best

shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
ops = sys.argv[2].split(",")
lanes_list = [int(v) for v in sys.argv[3].split(",")] if len(sys.argv) > 3 and sys.argv[3] else []
for R, K in shapes:
    for dt in (torch.float16, torch.float32):
        size = R * K * (2 if dt == torch.float16 else 4)
        copies = max(2, math.ceil((512 << 20) / size))
        base = torch.randn(R, K, device="cuda")
        inputs = [(base + 0.001 * i).to(dt) for i in range(copies)]
        w = torch.randn(K, device="cuda", dtype=dt)
        b = torch.randn(K, device="cuda", dtype=dt)
        nb = 2 * size
        for op in ops:
            fn = getattr(clreduce, op)
            args = {"rms_norm": (w,), "layer_norm": (w, b)}.get(op, ())
            peer = {"softmax": lambda t: torch.softmax(t, -1), "log_softmax": lambda t: torch.log_softmax(t, -1),
                    "rms_norm": lambda t: F.rms_norm(t, (K,), w),
                    "layer_norm": lambda t: F.layer_norm(t, (K,), w, b)}[op]
            ours = lambda t: fn(t, *args)
            cells = [f"public {per_call(ours, inputs):.1f}", f"torch {per_call(peer, inputs):.1f}",
                     f"| gpu {gpu_time(ours, inputs):.1f}", f"torch {gpu_time(peer, inputs):.1f}"]
            for lanes in lanes_list:
                try:
                    g = gpu_time(lambda t: fn(t, *args, force=RowForce(lanes=lanes)), inputs)
                    cells.append(f"L{lanes} {g:.1f}")
                except Exception as exc:
                    cells.append(f"L{lanes} {type(exc).__name__}")
            print(op, str(dt)[6:], f"{R}x{K}", f"({nb/1e6:.0f} MB r+w)", " ".join(cells), flush=True)
        del inputs, base
        torch.cuda.empty_cache()
