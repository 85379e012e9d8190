"""logcumsumexp accuracy on every OpenCL device: float32 rows of 1e5 and 1e6 values of base + N(0, 1),
max relative error against float64 numpy.logaddexp.accumulate, beside numpy's own float32 accumulate.
Run with the ICD folder of .ci/run in OCL_ICD_VENDORS (and RUSTICL_ENABLE=llvmpipe)."""
import numpy as np

import clreduce
from clreduce.backends.opencl import all_devices

rng = np.random.default_rng(1)
for n in (10**5, 10**6):
    for base in (0.0, 1e4):
        x = (base + rng.standard_normal(n)).astype(np.float32)
        ref = np.logaddexp.accumulate(x.astype(np.float64))
        rel = lambda got: float((np.abs(got.astype(np.float64) - ref) / np.abs(ref)).max())  # noqa: E731
        print(f"n={n} base={base:g}: numpy float32 {rel(np.logaddexp.accumulate(x)):.2e}")
        for d in all_devices():
            print(f"   {d.platform.name[:24]:24s} {d.name[:26]:26s} {rel(clreduce.logcumsumexp(x, device=d)):.2e}")
