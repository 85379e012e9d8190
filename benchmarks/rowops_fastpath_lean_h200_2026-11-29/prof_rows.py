"""H200: where a row op's public call goes on torch tensors (8192x1000 etc.): each piece of the
fast path timed alone (ns per call, best of 5 loops of 3000), back-to-back public calls, and
GPU-only time per call (a _sleep queued first so the host runs ahead; events around 200 calls)."""
import cProfile, io, pstats, sys, time
import torch
import torch.nn.functional as F
import clreduce
from clreduce import fastpath_rows, config, fastpath

def per_call(fn, calls=3000, repeats=5):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = 1e18
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best / 1000

def gpu_time(fn, calls=200):
    fn(); torch.cuda.synchronize()
    best = 1e18
    for _ in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(2e8))  # ~0.1 s: the host queues everything behind it
        s.record()
        for _ in range(calls):
            fn()
        e.record(); torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) * 1000 / calls)
    return best

shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
for R, K in shapes:
    for dt in (torch.float16, torch.float32):
        x = torch.randn(R, K, device="cuda", dtype=dt)
        w = torch.randn(K, device="cuda", dtype=dt)
        b = torch.randn(K, device="cuda", dtype=dt)
        for op in ("softmax", "rms_norm", "layer_norm"):
            fn = getattr(clreduce, op)
            args = {"rms_norm": (w,), "layer_norm": (w, b)}.get(op, ())
            peer = {"softmax": lambda: torch.softmax(x, -1), "rms_norm": lambda: F.rms_norm(x, (K,), w),
                    "layer_norm": lambda: F.layer_norm(x, (K,), w, b)}[op]
            call = lambda: fn(x, *args)
            call(); call()
            weight, bias, eps = (w if args else None), (b if len(args) > 1 else None), \
                {"rms_norm": 1e-6, "layer_norm": 1e-5}.get(op)
            axis = -1
            sig = lambda: fastpath_rows.signature(op, x, axis, weight, bias, eps, None, None, None, None, None)
            key = sig()
            entry = fastpath_rows.lookup(key)
            launcher = entry.launch.__self__
            ptrs = (x.data_ptr(), x.data_ptr(), 0, 0, 0, 0, 0)
            stream = launcher.stream_of(launcher.device_id)
            nb = 2 * x.numel() * x.element_size()
            row = dict(
                public=per_call(call), peer=per_call(peer),
                gpu=gpu_time(call), gpu_peer=gpu_time(peer),
                signature=per_call(sig), env=per_call(config.call_env_and_fast_path),
                lookup=per_call(lambda: fastpath_rows.lookup(key)),
                entry=per_call(lambda: entry(x, weight, bias, None, None)),
                new_empty=per_call(lambda: x.new_empty(launcher.rows_shape, dtype=launcher.torch_out)),
                empty_like=per_call(lambda: torch.empty_like(x)),
                stream=per_call(lambda: launcher.stream_of(launcher.device_id)),
                get_device=per_call(launcher.get_device),
                run=per_call(lambda: launcher.run(ptrs, stream)),
                describe=per_call(lambda: fastpath._describe_torch(x)),
            )
            print(op, str(dt)[6:], f"{R}x{K}", f"{nb / row['public'] / 1e3:.0f} GB/s public",
                  " ".join(f"{k}={v:.2f}" for k, v in row.items()), flush=True)
        if (R, K) == shapes[0] and dt == torch.float16:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(3000):
                clreduce.rms_norm(x, w)
            prof.disable()
            torch.cuda.synchronize()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(22)
            print(text.getvalue()[-4000:])
