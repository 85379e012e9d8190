"""Look-back A/B: argv op dtype rows k cfg. cfg: base | one:<share>[:<LB_ONE_COPY>].
Prints GB/s (read + written) of the public call (median of 7 batches of 10) and a hash of the
result (the look-back's sums take a fixed order, so every cfg must give the same bits)."""
import sys, time, statistics, hashlib, faulthandler
faulthandler.dump_traceback_later(90, exit=True)
import torch, clreduce
from clreduce import plan_scan
op, dtype, rows, k, cfg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if cfg != "base":
    parts = cfg.split(":")
    share = float(parts[1])
    plan_scan.LOOKBACK_ONE_COPY.update({4: (128, share, 8), 2: (128, share, 8)})
    if len(parts) > 2:
        real = plan_scan._scan_defines
        def patched(*a, **more):
            if more.get("LB_ONE_COPY"):
                more["LB_ONE_COPY"] = int(parts[2])
            return real(*a, **more)
        plan_scan._scan_defines = patched
fn = getattr(clreduce, op)
g = torch.Generator(device="cuda").manual_seed(0)
xs = [torch.randn((rows, k), device="cuda", generator=g).to(getattr(torch, dtype)) for _ in range(2)]
for i in range(3):
    fn(xs[i % 2], axis=-1)
torch.cuda.synchronize()
per = []
for b in range(7):
    t0 = time.perf_counter()
    for i in range(10):
        fn(xs[i % 2], axis=-1)
    torch.cuda.synchronize()
    per.append((time.perf_counter() - t0) / 10)
gb = 2 * xs[0].numel() * xs[0].element_size() / 1e9
y = fn(xs[0], axis=-1)
h = hashlib.sha1(y.contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()[:12]
x64 = xs[0].double()
ref = torch.cumsum(x64, -1) if op == "cumsum" else torch.logcumsumexp(x64, -1) if op == "logcumsumexp" else None
err = float(((y.double() - ref).abs() / ref.abs().clamp(min=1)).max()) if ref is not None else float("nan")
print(f"{op} {dtype} {rows}x{k} {cfg:14s} {gb / statistics.median(per):6.0f} GB/s (min-time {gb / min(per):6.0f}) hash {h} err {err:.1e}", flush=True)
