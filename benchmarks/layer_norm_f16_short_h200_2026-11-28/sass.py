"""Compile the H200 plan's kernel for a shape to SASS locally (nvcc -cubin sm_90 + cuobjdump).
usage: python3 .gpu/ln/sass.py TREE OP DTYPE ROWSxK OUTPREFIX [EXTRA=DEF ...]"""
import sys, subprocess, os
tree, op, dt, shp, outp = sys.argv[1:6]
extra = [a for a in sys.argv[6:]]
sys.path.insert(0, tree)
from clreduce.backends.cuda import probe
from clreduce.plan_rowops import plan_row, RowProblem, RowForce
from clreduce.backends.cuda.launch import cuda_source, nvrtc_options
caps = probe.caps_from_properties(probe.H200_PROPERTIES)
r, k = (int(v) for v in shp.split("x"))
prob = RowProblem(op, r, k, dt, weight=op != "softmax", bias=False, params_half=(dt == "float16" and op != "softmax"))
p = plan_row(caps, prob, RowForce())
d = dict(p.passes[0].defines)
for e in extra:
    n, v = e.split("=")
    d[n] = v
opts = nvrtc_options(tuple(sorted(d.items())))
opts = [o for o in opts if not o.startswith("--std")] + ["-std=c++17"]
src = outp + ".cu"
open(src, "w").write(cuda_source(p.kernel_file))
cmd = ["nvcc", "-cubin", "-arch=sm_90", "-Xptxas", "-v", *opts, src, "-o", outp + ".cubin"]
res = subprocess.run(cmd, capture_output=True, text=True)
print(res.stderr[-1500:])
sass = subprocess.run(["/tmp/nvd/x/nvidia/cu13/bin/nvdisasm", "-c", "-g", outp + ".cubin"], capture_output=True, text=True).stdout
open(outp + ".sass", "w").write(sass)
ins = [l for l in sass.splitlines() if "/*" in l and ";" in l]
print("instructions", len(ins), "plan lanes", p.lanes, "wg", p.wg_size, "vec", p.vec, "nper", p.nper)
