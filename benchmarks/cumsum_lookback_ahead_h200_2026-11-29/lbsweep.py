"""H200 sweep of the LB_AHEAD look-back shape: one config per process (plans are cached).
argv: dtype wg share rounds pause_ns [MACRO=V,...]  ->  prints GB/s (read + written) of the public call
per shape. The macros (added 2026-11-29 for benchmarks/cumsum_lookback_fetchers_h200_2026-11-29/) go to
the look-back's PHASE 2 launch; without them the script runs as it did for run2.sh."""
import sys, time, statistics, math
import torch
import clreduce
from clreduce import plan_scan
dtype, wg, share, rounds, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
extra = dict(kv.split("=") for kv in sys.argv[6].split(",")) if len(sys.argv) > 6 else {}
size = 4 if dtype == "float32" else 2
if wg:
    plan_scan.LOOKBACK_AHEAD[size] = (wg, share, rounds)
real = plan_scan._scan_defines
def patched(*a, **more):
    if a[12] == 2 and pause >= 0:
        more["POLL_PAUSE_NS"] = pause
    if a[12] == 2:
        more.update(extra)
    return real(*a, **more)
plan_scan._scan_defines = patched
out = []
for shape in [(1, 2**28), (64, 2**22)]:
    t = getattr(torch, dtype)
    xs = [torch.randn(shape, device="cuda").to(t) for _ in range(2)]
    ref = torch.cumsum(xs[0].double(), -1)
    got = clreduce.cumsum(xs[0], axis=-1)
    err = float((got.double() - ref).abs().max() / ref.abs().max().clamp(min=1))
    for i in range(3):
        clreduce.cumsum(xs[i % 2], axis=-1)
    torch.cuda.synchronize()
    per = []
    for b in range(5):
        t0 = time.perf_counter()
        for i in range(10):
            clreduce.cumsum(xs[i % 2], axis=-1)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / 10)
    gb = 2 * xs[0].numel() * xs[0].element_size() / 1e9
    out.append(f"{shape[0]}x{shape[1]} {gb / statistics.median(per):6.0f}")
    assert err < 1e-3, err
print(f"{dtype} wg={wg} share={share} rounds={rounds} pause={pause} {extra}: " + "  ".join(out), flush=True)
