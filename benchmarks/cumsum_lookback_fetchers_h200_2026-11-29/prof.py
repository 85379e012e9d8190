"""cumsum look-back under ncu: argv dtype rows cols; 3 calls."""
import sys, torch, clreduce
dt, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = torch.randn((rows, cols), device="cuda").to(getattr(torch, dt))
for _ in range(3):
    y = clreduce.cumsum(x, axis=-1)
torch.cuda.synchronize()
ref = torch.cumsum(x.double(), -1)
print("err", float((y.double() - ref).abs().max() / ref.abs().max()))
