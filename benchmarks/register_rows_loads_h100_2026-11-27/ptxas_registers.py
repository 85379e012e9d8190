"""ptxas -v of a row-op variant for sm_90 as planned for an H100: registers and spills (no GPU).

Run from the repository root:
    python benchmarks/register_rows_loads_h100_2026-11-27/ptxas_registers.py softmax:float16:16384x16384 \
        rms_norm:float16:65536x4096:mb=8
(`wide=1` applies the float32 wide-group rule to the row, `mb=K` forces MIN_BLOCKS K.)
"""
import dataclasses, subprocess, sys, tempfile, os
sys.path.insert(0, ".")  # the repository root
from pathlib import Path
from clreduce.backends.cuda.launch import cuda_source, nvrtc_options
from clreduce.backends.cuda.probe import H100_SXM_PROPERTIES, caps_from_properties
import clreduce.plan_rowops as pr
caps = caps_from_properties(H100_SXM_PROPERTIES)

def regs(kernel_file, defines, src=None):
    src = src or cuda_source(kernel_file)
    opts = [o for o in nvrtc_options(defines) if not o.startswith("--std=")] + ["-std=c++17"]
    d = tempfile.mkdtemp()
    Path(d, "k.cu").write_text(src)
    r = subprocess.run(["nvcc", "--cubin", "-arch=sm_90", "-Xptxas", "-v", *opts, "k.cu", "-o", "k.cubin"],
                       cwd=d, capture_output=True, text=True)
    out = r.stdout + r.stderr
    lines = [l.strip() for l in out.splitlines() if "registers" in l or "spill" in l or "error" in l]
    return " | ".join(lines)[-300:]

def variant(op, dtype, R, K, wide=False, mb=None, force=None):
    orig_wg, orig_mb = pr._cuda_register_wg, pr.cuda_min_blocks
    if wide:
        pr._cuda_register_wg = lambda c, p, f, wg, a: orig_wg(c, dataclasses.replace(p, dtype="float32"), f, wg, a)
    if mb is not None:
        pr.cuda_min_blocks = lambda c, p, cache, nper, wg: mb
    try:
        p = pr.plan_row(caps, pr.RowProblem(op=op, rows=R, row_len=K, dtype=dtype, weight=op.endswith("norm"),
                                            params_half=op.endswith("norm")), force)
    finally:
        pr._cuda_register_wg, pr.cuda_min_blocks = orig_wg, orig_mb
    return p

if __name__ == "__main__":
    for spec in sys.argv[1:]:
        op, dt, shp, *rest = spec.split(":")
        R, K = map(int, shp.split("x"))
        kw = dict(kv.split("=") for kv in rest)
        p = variant(op, dt, R, K, wide="wide" in kw, mb=int(kw["mb"]) if "mb" in kw else None)
        print(spec, p.cache, "wg", p.wg_size, "nper", p.nper, "->", regs(p.kernel_file, p.passes[0].defines))

def sass(kernel_file, defines, src=None):
    src = src or cuda_source(kernel_file)
    opts = [o for o in nvrtc_options(defines) if not o.startswith("--std=")] + ["-std=c++17"]
    d = tempfile.mkdtemp()
    Path(d, "k.cu").write_text(src)
    subprocess.run(["nvcc", "--cubin", "-arch=sm_90", *opts, "k.cu", "-o", "k.cubin"], cwd=d, check=True)
    return subprocess.run(["cuobjdump", "-sass", "k.cubin"], cwd=d, capture_output=True, text=True).stdout

def ptx(kernel_file, defines, src=None):
    src = src or cuda_source(kernel_file)
    opts = [o for o in nvrtc_options(defines) if not o.startswith("--std=")] + ["-std=c++17"]
    d = tempfile.mkdtemp()
    Path(d, "k.cu").write_text(src)
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", *opts, "k.cu", "-o", "k.ptx"], cwd=d, check=True)
    return Path(d, "k.ptx").read_text()
