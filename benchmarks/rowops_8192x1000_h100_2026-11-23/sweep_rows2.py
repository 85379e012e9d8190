"""8192x1000 row ops on CUDA torch tensors, L2-cold: 8 inputs rotated (128+ MB > the H100's
50 MB L2), back-to-back public calls timed by CUDA events, 5 rounds alternating variants,
median GB/s (read + write)."""
import statistics, torch, torch.nn.functional as F
import clreduce
from clreduce.plan_rowops import RowForce
N = 64
R, K = 8192, 1000
VARIANTS = [None, (32, None), (64, None), (128, None), (256, None), (32, 128), (64, 512), (128, 512)]
def timeit(fn, xs):
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for i in range(N): fn(xs[i % len(xs)])
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / N * 1000
for dt in (torch.float16, torch.float32):
    xs = [torch.randn(R, K, device="cuda", dtype=dt) for _ in range(8)]
    gb = 2 * xs[0].numel() * xs[0].element_size() / 1e9
    peers = {"rms_norm": lambda x: F.rms_norm(x, (K,), eps=1e-6), "softmax": lambda x: torch.softmax(x, -1),
             "layer_norm": lambda x: F.layer_norm(x, (K,), eps=1e-5)}
    for op in ("rms_norm", "softmax", "layer_norm"):
        fns = {"torch": peers[op]}
        for v in VARIANTS:
            force = None if v is None else RowForce(lanes=v[0], wg_size=v[1])
            fns["default" if v is None else f"L{v[0]}/W{v[1]}"] = (lambda f: lambda x: getattr(clreduce, op)(x, force=f))(force)
        ref = peers[op](xs[0]).float()
        for name, fn in list(fns.items()):
            err = (fn(xs[0]).float() - ref).abs().max().item()
            assert err < 2e-2, (op, name, err)
            for x in xs: fn(x)
        times = {name: [] for name in fns}
        for _ in range(5):
            for name, fn in fns.items():
                times[name].append(timeit(fn, xs))
        cells = [f"{name} {gb / statistics.median(t) * 1e6:5.0f}" for name, t in times.items()]
        print(str(dt)[6:], op, " | ".join(cells), flush=True)
