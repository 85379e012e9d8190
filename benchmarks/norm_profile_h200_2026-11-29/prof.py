"""One norm op under ncu: argv op dtype rows cols; 3 calls, then the error against float64."""
import sys, torch, clreduce
op, dt, rows, cols = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x = torch.randn((rows, cols), device="cuda").to(getattr(torch, dt))
for _ in range(3):
    y = getattr(clreduce, op)(x)
torch.cuda.synchronize()
xd = x.double()
ref = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) if op == "rms_norm" else \
    torch.nn.functional.layer_norm(xd, (cols,), eps=1e-5)
print("err", float((y.double() - ref).abs().max()))
