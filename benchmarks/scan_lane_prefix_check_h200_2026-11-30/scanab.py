"""cumsum/cumprod public call on CUDA torch tensors: GB/s (read + written), median of 5 batches of 10."""
import sys, statistics, time
import torch, clreduce
label = sys.argv[1]
for op in ("cumsum", "cumprod"):
    for dtype in ("float32", "float16"):
        for rows, k in ((1048576, 32), (262144, 128), (16384, 1024), (65536, 4096)):
            x = (torch.randn((rows, k), device="cuda") * (0.01 if op == "cumprod" else 1) + (1 if op == "cumprod" else 0)).to(getattr(torch, dtype))
            f = getattr(clreduce, op)
            for _ in range(3):
                f(x, axis=-1)
            torch.cuda.synchronize()
            per = []
            for b in range(5):
                t0 = time.perf_counter()
                for _ in range(10):
                    f(x, axis=-1)
                torch.cuda.synchronize()
                per.append((time.perf_counter() - t0) / 10)
            print(f"{label} {op} {dtype} {rows}x{k} {2 * x.numel() * x.element_size() / statistics.median(per) / 1e9:6.0f}", flush=True)
