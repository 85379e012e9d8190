# inductor's write kernel for f16 rms_norm 64x4M: PTX + launch dims
mkdir -p $OUT/tc
TRITON_CACHE_DIR=$OUT/tc TORCH_LOGS=output_code python3 - > $OUT/inductor_log.txt 2>&1 <<'PY'
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
for dt, rows, k in ((torch.float16, 64, 4194304), (torch.float32, 1, 1 << 28)):
    w = torch.ones(k, device="cuda", dtype=dt)
    x = torch.randn((rows, k), device="cuda", dtype=torch.float32).to(dt)
    f = torch.compile(lambda t: F.rms_norm(t, (k,), w, eps=1e-6), dynamic=False)
    f(x); f(x); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f(x); torch.cuda.synchronize()
    prof.export_chrome_trace(f"/tmp/tr.json")
    import json
    for e in json.load(open("/tmp/tr.json"))["traceEvents"]:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            print("KERNEL", dt, rows, k, e["name"][:60], e.get("dur"), a.get("grid"), a.get("block"), a.get("registers per thread"), a.get("shared memory"))
    del x, w
PY
grep KERNEL $OUT/inductor_log.txt
find $OUT/tc -name "*.ptx" | head; find $OUT/tc -name "*.json" -path "*poi*" | head -3 | xargs -r cat | head -c 1500
