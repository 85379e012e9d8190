"""One scan op under ncu: argv op dtype rows cols; 3 calls, then the error against float64."""
import sys, torch, clreduce
op, dt, rows, cols = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x = torch.randn((rows, cols), device="cuda").to(getattr(torch, dt))
for _ in range(3):
    y = getattr(clreduce, op)(x, axis=-1)
torch.cuda.synchronize()
ref = getattr(torch, op)(x.double(), -1)
print("err", float((y.double() - ref).abs().max() / ref.abs().max()))
