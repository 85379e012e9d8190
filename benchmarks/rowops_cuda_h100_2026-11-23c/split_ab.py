import sys, time, torch, clreduce
from clreduce.plan_rowops import RowForce
for shape in ((4096, 65536),):
    for dt in (torch.float32, torch.float16):
        xs = [torch.randn(shape, device="cuda", dtype=dt) for _ in range(3)]
        res = {}
        for name, f in (("default", None), ("split1", RowForce(split=1))):
            clreduce.cumsum(xs[0], axis=-1, force=f); torch.cuda.synchronize()
            ts = []
            for b in range(5):
                t0 = time.perf_counter()
                for x in xs * 3:
                    clreduce.cumsum(x, axis=-1, force=f)
                torch.cuda.synchronize(); ts.append((time.perf_counter() - t0) / 9)
            ts.sort(); res[name] = 2 * xs[0].numel() * xs[0].element_size() / ts[2] / 1e9
        print(shape, dt, " ".join(f"{k}={v:.0f}GB/s" for k, v in res.items()), flush=True)
