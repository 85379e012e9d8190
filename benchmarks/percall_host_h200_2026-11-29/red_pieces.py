"""H200: host-only us of each piece of a learned clreduce.mean(axis=-1) on cupy and torch
(GPU held by a _sleep), min/median of 15 loops of 200 calls."""
import statistics, sys, time
import torch, cupy
import clreduce
from clreduce import fastpath, config, tuning, api

def host(fn, calls=200, loops=15):
    fn(); torch.cuda.synchronize()
    out = []
    for _ in range(loops):
        torch.cuda._sleep(int(4e7))
        t0 = time.perf_counter_ns()
        for i in range(calls):
            fn()
        out.append((time.perf_counter_ns() - t0) / calls / 1000)
        torch.cuda.synchronize()
    return f"{min(out):.2f}/{statistics.median(out):.2f}"

for kind in ("cupy", "torch"):
    t = torch.randn(8192, 1000, device="cuda", dtype=torch.float16)
    x = cupy.asarray(t) if kind == "cupy" else t
    clreduce.mean(x, axis=-1); clreduce.mean(x, axis=-1)
    sig = lambda: fastpath.signature("mean", "mean", x, -1, None, None, False, 0.0, False, None, None, {})
    key = sig()
    entry = fastpath.lookup(key)
    L = entry.launch.__self__
    run = L.run
    slots = run.local.slots
    (fptr, gx, gy, gz, bx, by, bz), params = run.raw[0], slots.params[0]
    lk = run.launch_kernel
    stream = L.cupy_stream() if kind == "cupy" else L.stream_of(L.device_id)
    res = entry.direct(x, None)
    xp = x.data.ptr if kind == "cupy" else x.data_ptr()
    op = res.data.ptr if kind == "cupy" else res.data_ptr()
    describe = fastpath._describe_cupy if kind == "cupy" else fastpath._describe_torch
    pieces = dict(
        public=lambda: clreduce.mean(x, axis=-1),
        reduce=lambda: api._reduce("mean", x, -1, where={}),
        signature=sig,
        lookup=lambda: fastpath.lookup(key),
        sig_lookup=lambda: fastpath.lookup(sig()),
        key_eq=lambda: sig() == key,
        key_hash=lambda: hash(key),
        direct=lambda: entry.direct(x, None),
        launch_kernel=lambda: lk(fptr, gx, gy, gz, bx, by, bz, 0, stream, params, 0),
        three=lambda: run.three(xp, op, 0, stream),
        get_device=L.get_device,
        describe=lambda: describe(x),
        env=config.call_env_and_fast_path,
        tune_state=tuning.state,
        noop=lambda: None,
    )
    if kind == "cupy":
        pieces.update(ndarray=lambda: L.ndarray(L.out_shape, L.out_dtype), ptr=lambda: x.data.ptr,
                      stream=L.cupy_stream, cupy_mean=lambda: cupy.mean(x, -1))
    else:
        pieces.update(new_empty=lambda: x.new_empty(L.out_shape), ptr=lambda: x.data_ptr(),
                      stream=lambda: L.stream_of(L.device_id), torch_mean=lambda: torch.mean(x, -1),
                      torch_empty=lambda: torch.empty(L.out_shape, dtype=torch.float16, device=x.device),
                      torch_sum_out=lambda: torch.empty((8192,), dtype=torch.float16, device="cuda"))
    print(kind, " ".join(f"{k}={host(v)}" for k, v in pieces.items()), flush=True)
    print("key", key, flush=True)
    import cProfile, pstats, io
    pr = cProfile.Profile(); pr.enable()
    for _ in range(3000):
        clreduce.mean(x, axis=-1)
    pr.disable(); torch.cuda.synchronize()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14); print(s.getvalue()[-2600:])
