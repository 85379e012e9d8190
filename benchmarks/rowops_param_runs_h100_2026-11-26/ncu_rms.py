import sys, torch, torch.nn.functional as F
import clreduce
which = sys.argv[1]
x = torch.randn(64, 4194304, device="cuda", dtype=torch.float16)
w = torch.randn(4194304, device="cuda", dtype=torch.float16)
if which == "cl":
    for _ in range(3):
        clreduce.rms_norm(x, w)
else:
    g = torch.compile(lambda x: F.rms_norm(x, (4194304,), w, 1e-6))
    for _ in range(3):
        g(x)
torch.cuda.synchronize()
