"""ptxas -v of a row-op variant for sm_90 as planned for an H100: registers and spills (no GPU).

Run from the repository root (nvcc on PATH):
    python benchmarks/register_rows_loads_h100_2026-11-27/ptxas_registers.py softmax:float16:16384x16384 \\
        rms_norm:float16:65536x4096:mb=8
`wide=1` applies the float32 wide-group rule to the row, `mb=K` forces MIN_BLOCKS K. ``ptx()``
gives the PTX of a variant (where the run loads and their conversions sit).
"""
import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")  # the repository root
from clreduce.backends.cuda.launch import cuda_source, nvrtc_options  # noqa: E402
from clreduce.backends.cuda.probe import H100_SXM_PROPERTIES, caps_from_properties  # noqa: E402
import clreduce.plan_rowops as pr  # noqa: E402

caps = caps_from_properties(H100_SXM_PROPERTIES)


def _nvcc(kernel_file, defines, what, out, extra=()):
    """nvcc of one variant to `out` (--cubin or --ptx) in a temporary folder: (folder, output)."""
    opts = [o for o in nvrtc_options(defines) if not o.startswith("--std=")] + ["-std=c++17"]
    d = Path(tempfile.mkdtemp())
    (d / "k.cu").write_text(cuda_source(kernel_file))
    r = subprocess.run(["nvcc", what, "-arch=sm_90", *extra, *opts, "k.cu", "-o", out], cwd=d,
                       capture_output=True, text=True)
    return d, r.stdout + r.stderr


def regs(kernel_file, defines):
    _, out = _nvcc(kernel_file, defines, "--cubin", "k.cubin", ("-Xptxas", "-v"))
    lines = [l.strip() for l in out.splitlines() if "registers" in l or "spill" in l or "error" in l]
    return " | ".join(lines)[-300:]


def ptx(kernel_file, defines):
    d, _ = _nvcc(kernel_file, defines, "--ptx", "k.ptx")
    return (d / "k.ptx").read_text()


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
