"""Regressions for OpenCL driver bugs the planner works around (README, Supported devices).

Each driver test runs in a fresh process: the bugs show on the first launch after a kernel is
compiled, which an earlier test in this process would already have spent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clreduce.caps import DeviceCaps
from clreduce.plan import Force, Problem, UnsupportedOnDevice, plan

ROOT = Path(__file__).resolve().parents[1]

# Mesa rusticl on llvmpipe, as `clreduce probe --json` reports it (Debian 12, Mesa 22.3.6).
RUSTICL_LLVMPIPE = DeviceCaps(
    vendor="other", name="llvmpipe (LLVM 15.0.6, 256 bits)", vendor_string="Mesa/X.org", platform_name="rusticl",
    device_type="cpu", device_version="OpenCL 3.0 ", driver_version="22.3.6", opencl_c_versions=("1.2", "3.0"),
    max_work_group_size=1024, local_mem_size=32768, compute_units=8, fp16=False, fp64=False)

# The first launch of reduce_state.cl's reduce_cols with VEC > 1 lost the argmax/argmin identity
# in the first 8 work-items of each llvmpipe thread: index 0 for all-negative (argmax) or
# all-positive (argmin) columns. Default plan there: wg 16, vec 16. The same data through a
# 3-D array (the middle axis) and with a K long enough for the split-over-K partials pass.
_FIRST_LAUNCH = """
import sys
import numpy as np
import clreduce
from clreduce.backends import opencl
device = opencl.all_devices()[int(sys.argv[1])]
rng = np.random.default_rng(7)
cases = [("argmax", -np.abs(rng.standard_normal((3, 70000))), 0),
         ("argmin", np.abs(rng.standard_normal((3, 70000))) + 1, 0),
         ("argmax", -np.abs(rng.standard_normal((2, 5, 4099))), 1),
         ("argmin", np.abs(rng.standard_normal((1, 4099, 40))) + 1, 1)]
bad = []
for op, x, axis in cases:
    x = x.astype(np.float32)
    got = getattr(clreduce, op)(x, axis=axis, device=device)
    wrong = int(np.sum(got != getattr(np, op)(x, axis=axis)))
    if wrong:
        bad.append(f"{op} axis={axis} of {x.shape}: {wrong} wrong indices")
print("; ".join(bad) or "ok")
"""


def test_rusticl_state_columns_run_at_vec_1():
    for op in ("argmax", "argmin", "var", "logsumexp"):
        p = plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op=op))
        assert p.strategy.startswith("columns") and p.vec == 1 and all("-DVEC=1" in k.options for k in p.passes)
        with pytest.raises(UnsupportedOnDevice, match="rusticl"):
            plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op=op), Force(vec=16))
    # single-value ops (reduce_rows.cl's vector accumulators) and rows are not affected
    assert plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op="max")).vec > 1
    assert plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=70000, dtype="float32", op="argmax")).vec > 1
    # other implementations keep their vectors
    pocl = DeviceCaps(vendor="amd", name="pthread-AMD EPYC", platform_name="Portable Computing Language",
                      device_type="cpu", compute_units=2)
    assert plan(pocl, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op="argmax")).vec > 1


def test_argmax_columns_on_first_launch(found_devices):
    """On every device, in a fresh process: the first launch must be right too."""
    from clreduce.backends import opencl

    all_devices = opencl.all_devices()
    if not found_devices:
        pytest.skip("!!! no OpenCL device")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    failures = []
    for found in found_devices:
        index = next(i for i, d in enumerate(all_devices) if d.int_ptr == found.device.int_ptr)
        proc = subprocess.run([sys.executable, "-c", _FIRST_LAUNCH, str(index)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        out = proc.stdout.strip().splitlines()[-1:] or [""]
        if proc.returncode != 0 or out != ["ok"]:
            failures.append(f"{found.id}: exit {proc.returncode}: {out[0] or proc.stderr[-1500:]}")
    assert not failures, "\n".join(failures)
