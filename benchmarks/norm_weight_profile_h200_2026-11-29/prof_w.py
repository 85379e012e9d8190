"""rms_norm of one float16 row of 2**28 with a weight (as tools/bench_rowops.py passes one:
torch.ones(k)) under ncu: argv impl (clreduce | compile); 4 calls."""
import sys
import torch
import torch.nn.functional as F
import clreduce

impl = sys.argv[1]
k = 1 << 28
x = torch.randn((1, k), device="cuda").half()
w = torch.ones(k, device="cuda").half()
o = torch.empty_like(x)
if impl == "clreduce":
    def f():
        return clreduce.rms_norm(x, w, out=o)
else:
    f = torch.compile(lambda t, ww: F.rms_norm(t, (k,), ww, eps=1e-6))
    g = f
    def f():  # noqa: F811
        return g(x, w)
for _ in range(4):
    y = f()
torch.cuda.synchronize()
print("max abs err vs float64", float((y.double() - x.double() / torch.sqrt((x.double() ** 2).mean() + 1e-6)).abs().max()))
