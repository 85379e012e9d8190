"""cpu_vec.h's functions on every OpenCL device, against numpy in float64.

cpu_exp (the exp of softmax.cl's CPU_PASSES walks on PoCL, CPU_OWN_EXP) replaces a built-in
that OpenCL allows 3 ulp. Its error is measured here in float32 ulps of the float64 result: at
most 0.99 on pip's and Debian's PoCL, Intel's runtime and rusticl (2026-11-28). The bound below
is 1.5 ulp: a polynomial coefficient off by 1e-6 relative, a dropped term or a wrong 2^n
factor fails it; softmax's own tolerance (rtol 1e-5, rowops_refs.TOL) would let an exp 100
ulps off pass.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from clreduce import kernels

CPU_EXP_MAX_ULP = 1.5

_EXP_KERNEL = """
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC %(vec)d
#define IN_T float
#define RAW_T float
#define ACC_T float
#define IN_HALF 0
#define OUT_HALF 0
%(cpu_vec)s
__kernel void exp_of(__global const float *x, __global float *y) {
    const size_t i = get_global_id(0) * VEC;
    CPU_V(float) v;
    for (int e = 0; e < VEC; ++e) {
        ((float *)&v)[e] = x[i + e];
    }
    const CPU_V(float) r = cpu_exp(v);
    for (int e = 0; e < VEC; ++e) {
        y[i + e] = ((const float *)&r)[e];
    }
}
"""


def _exp_inputs(subnormals: bool) -> np.ndarray:
    rng = np.random.default_rng(20261128)
    parts = [
        np.linspace(-110.0, 90.0, 1 << 18, dtype=np.float32),  # the whole range, both clamps
        rng.uniform(-20.0, 0.0, 1 << 18).astype(np.float32),   # softmax's x - max
        -np.logspace(-30, 2, 1 << 15).astype(np.float32),      # r near 0, n = 0
        np.float32(np.log(2.0) / 2) + rng.uniform(-1e-3, 1e-3, 4096).astype(np.float32),  # |r| at ln2/2
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -87.33, -87.34, -100.0, -103.97, -104.0,
                  -1e30, 88.72, 88.73, 89.0, 1e30, 1e-40, -1e-40], np.float32),
    ]
    x = np.concatenate(parts)
    if not subnormals:  # results under FLT_MIN flushed: compare only normal results
        x = x[~(x < np.float32(-87.33))]
    return x


def _ulp_errors(got: np.ndarray, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
        unit = np.maximum(np.spacing(np.abs(ref32)).astype(np.float64), 2.0 ** -149)
        err = np.abs(got.astype(np.float64) - ref) / unit
    # inf and NaN results must be exactly inf and NaN
    special = ~np.isfinite(ref32)
    err[special] = np.where((got[special] == ref32[special]) | (np.isnan(got[special]) & np.isnan(ref32[special])),
                            0.0, np.inf)
    return err


@pytest.mark.parametrize("vec", [4, 8, 16])
def test_cpu_exp_is_within_one_and_a_half_ulps(cl_device, cl_queue, vec):
    ctx = cl_queue.context
    src = _EXP_KERNEL % {"vec": vec, "cpu_vec": kernels.kernel_text("cpu_vec.h")}
    prg = cl.Program(ctx, src).build()
    denorms = bool(cl_device.single_fp_config & cl.device_fp_config.DENORM)
    x = _exp_inputs(subnormals=denorms)
    x = np.concatenate([x, np.zeros(-len(x) % vec, np.float32)])
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    prg.exp_of(cl_queue, (len(x) // vec,), None, xb, yb)
    got = np.empty_like(x)
    cl.enqueue_copy(cl_queue, got, yb)
    err = _ulp_errors(got, x)
    worst = int(np.argmax(err))
    assert err[worst] <= CPU_EXP_MAX_ULP, (
        f"cpu_exp({x[worst]!r}) = {got[worst]!r}, exp = {np.exp(np.float64(x[worst]))!r}: "
        f"{err[worst]:.3g} ulp on {cl_device.name!r}")
