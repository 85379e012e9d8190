import subprocess, sys, os
CASE = r'''
import sys, numpy as np, cupy as cp
from clreduce import rowops
import clreduce.plan_rowops as pr
from clreduce.plan_rowops import RowForce
mode, k = sys.argv[1], int(sys.argv[2])
if mode == "noparamruns":
    pr._param_runs = lambda *a, **kw: False
rng = np.random.default_rng(0)
x = (rng.standard_normal((37, k)) * 2 + 0.5).astype("float16")
w = (rng.standard_normal(k) * 0.5 + 1).astype("float32"); b = rng.standard_normal(k).astype("float32")
def off(a):
    f = cp.empty(a.size + 1, a.dtype); f[1:] = cp.asarray(a); return f[1:]
xd = cp.asarray(x); wo, bo = off(w), off(b)
force = {"none": RowForce(cache="none"), "lanes16": RowForce(lanes=16), "wonly": None}.get(mode)
try:
    r = rowops.layer_norm(xd, wo, None if mode == "wonly" else bo, force=force)
    r.get(); print("ok")
except Exception as e:
    print("FAIL", type(e).__name__, str(e)[:60])
'''
tree = sys.argv[1]
env = {**os.environ, "PYTHONPATH": "/tmp/site:" + tree}
for k in (1000, 992, 1024, 512, 200, 2000):
    for mode in ("default", "noparamruns", "none", "lanes16", "wonly"):
        r = subprocess.run([sys.executable, "-c", CASE, mode, str(k)], capture_output=True, text=True, env=env)
        print(k, mode, (r.stdout.strip().splitlines() or ["?" + r.stderr[-200:]])[-1], flush=True)
r = subprocess.run(["compute-sanitizer", "--print-limit", "3", sys.executable, "-c", CASE, "default", "1000"], capture_output=True, text=True, env=env)
print("SANITIZER", r.stdout[-3500:], r.stderr[-500:])
