import cProfile, pstats, time, torch, cupy, clreduce, io
x = torch.randn(1024, 128, device="cuda").half(); w = torch.ones(128, device="cuda", dtype=torch.float16)
xc = cupy.from_dlpack(x); wc = cupy.from_dlpack(w)
for name, fn in (("torch rms_norm(x,w)", lambda: clreduce.rms_norm(x, w)), ("torch rms_norm(x)", lambda: clreduce.rms_norm(x)),
                 ("torch softmax", lambda: clreduce.softmax(x)), ("cupy rms_norm(x,w)", lambda: clreduce.rms_norm(xc, wc)),
                 ("torch F.rms_norm", lambda: torch.nn.functional.rms_norm(x, (128,), w)), ("torch sum", lambda: clreduce.sum(x, axis=-1))):
    for _ in range(20): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(500): fn()
    torch.cuda.synchronize(); print(f"{name:22s} {(time.perf_counter() - t0) / 500 * 1e6:7.1f} us/call", flush=True)
raise SystemExit(0)
pr = cProfile.Profile(); pr.enable()
for _ in range(300): clreduce.rms_norm(x, w)
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(22); print(s.getvalue()[-6000:])
