"""cpu_vec.h's functions on every OpenCL device, against numpy in float64.

cpu_exp (the exp of softmax.cl's CPU_PASSES walks on PoCL, CPU_OWN_EXP) replaces a built-in
that OpenCL allows 3 ulp. Its error is measured here in float32 ulps of the float64 result: at
most 0.99 on pip's and Debian's PoCL, Intel's runtime and rusticl (2026-11-28). The bound below
is 1.5 ulp: a polynomial coefficient off by 1e-6 relative, a dropped term or a wrong 2^n
factor fails it; softmax's own tolerance (rtol 1e-5, rowops_refs.TOL) would let an exp 100
ulps off pass.

cpu_log (the log of row_scan.cl's logcumsumexp lanes on PoCL, CPU_OWN_EXP): at most 0.80 ulp of
the float64 log on the same four runtimes (2026-11-29), subnormal inputs included; the bound is
1 ulp. A coefficient of its polynomial off by 1e-6 relative (1.57 ulp), the subnormal scaling
dropped or ln 2's low part dropped each fail it.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from clreduce import kernels
from clreduce.backends.opencl_probe import probe_device

CPU_EXP_MAX_ULP = 1.5
CPU_LOG_MAX_ULP = 1.0

_FN_KERNEL = """
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC %(vec)d
#define IN_T float
#define RAW_T float
#define ACC_T float
#define IN_HALF 0
#define OUT_HALF 0
%(cpu_vec)s
__kernel void fn_of(__global const float *x, __global float *y) {
    const size_t i = get_global_id(0) * VEC;
    CPU_V(float) v;
    for (int e = 0; e < VEC; ++e) {
        ((float *)&v)[e] = x[i + e];
    }
    const CPU_V(float) r = %(fn)s(v);
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


def _ulp_errors(got: np.ndarray, x: np.ndarray, ref_fn=np.exp) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ref = ref_fn(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
        unit = np.maximum(np.spacing(np.abs(ref32)).astype(np.float64), 2.0 ** -149)
        err = np.abs(got.astype(np.float64) - ref) / unit
    # inf and NaN results must be exactly inf and NaN
    special = ~np.isfinite(ref32)
    err[special] = np.where((got[special] == ref32[special]) | (np.isnan(got[special]) & np.isnan(ref32[special])),
                            0.0, np.inf)
    return err


def _run(cl_queue, fn: str, vec: int, x: np.ndarray) -> np.ndarray:
    """fn (a cpu_vec.h function of a float vector) of x, VEC elements a work-item.

    Widths past the device's ``vector_bytes_limit`` are skipped, as the planner never builds
    them: pip's PoCL 3.0 on an AVX-512 Zen 4 host compiles for znver3, and a float16 argument
    there builds a program with no kernels (INVALID_KERNEL_NAME) once PoCL's kernel cache
    holds it (CI, 2026-11-29)."""
    limit = probe_device(cl_queue.device).vector_bytes_limit
    if limit is not None and vec * 4 > limit:
        pytest.skip(f"float{vec} is wider than the {limit} bytes this device compiles correctly "
                    "(DeviceCaps.vector_bytes_limit)")
    ctx = cl_queue.context
    src = _FN_KERNEL % {"vec": vec, "fn": fn, "cpu_vec": kernels.kernel_text("cpu_vec.h")}
    prg = cl.Program(ctx, src).build()
    n = len(x)
    x = np.concatenate([x, np.ones(-n % vec, np.float32)])
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    prg.fn_of(cl_queue, (len(x) // vec,), None, xb, yb)
    got = np.empty_like(x)
    cl.enqueue_copy(cl_queue, got, yb)
    return got[:n]


@pytest.mark.parametrize("vec", [4, 8, 16])
def test_cpu_exp_is_within_one_and_a_half_ulps(cl_device, cl_queue, vec):
    denorms = bool(cl_device.single_fp_config & cl.device_fp_config.DENORM)
    x = _exp_inputs(subnormals=denorms)
    got = _run(cl_queue, "cpu_exp", vec, x)
    err = _ulp_errors(got, x)
    worst = int(np.argmax(err))
    assert err[worst] <= CPU_EXP_MAX_ULP, (
        f"cpu_exp({x[worst]!r}) = {got[worst]!r}, exp = {np.exp(np.float64(x[worst]))!r}: "
        f"{err[worst]:.3g} ulp on {cl_device.name!r}")


def _log_inputs(subnormals: bool) -> np.ndarray:
    rng = np.random.default_rng(20261129)
    parts = [
        # every positive float's bit pattern equally likely: every exponent, subnormals included
        rng.integers(1, 0x7f800000, 1 << 20, dtype=np.uint32).view(np.float32),
        np.float32(1.0) + rng.uniform(-0.3, 0.45, 1 << 18).astype(np.float32),   # f's whole range, e = 0
        np.float32(1.0) + np.float32(2.0 ** -24) * np.arange(-4096, 4096, dtype=np.float32),  # log near 0
        np.sqrt(np.float32(0.5)) * (1 + rng.uniform(-1e-3, 1e-3, 4096)).astype(np.float32),  # the m split
        np.sqrt(np.float32(2.0)) * (1 + rng.uniform(-1e-3, 1e-3, 4096)).astype(np.float32),
        rng.uniform(2.0 ** -64, 17.0, 1 << 16).astype(np.float32),   # logcumsumexp's sums
        np.ldexp(np.float32(1.0), np.arange(-149, 128)).astype(np.float32),   # powers of two
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, -1.0, -1e-40, -np.inf, 1.0, 2.0, 0.5, np.e,
                  np.finfo(np.float32).max, np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal,
                  1e-40, 1.17549421e-38], np.float32),
    ]
    x = np.concatenate(parts)
    if not subnormals:  # a device that flushes subnormals reads them as 0: compare normal inputs
        x = x[~((np.abs(x) < np.finfo(np.float32).tiny) & (x != 0))]
    return x


@pytest.mark.parametrize("vec", [4, 8, 16])
def test_cpu_log_is_within_one_ulp(cl_device, cl_queue, vec):
    """cpu_log (row_scan.cl's logcumsumexp lanes on PoCL, CPU_OWN_EXP) against float64 log: at
    most CPU_LOG_MAX_ULP over every exponent, subnormals, the m split at sqrt(2) and results
    near 0; 0 -> -inf, +inf -> +inf, NaN and negatives -> NaN exactly."""
    denorms = bool(cl_device.single_fp_config & cl.device_fp_config.DENORM)
    x = _log_inputs(subnormals=denorms)
    got = _run(cl_queue, "cpu_log", vec, x)
    err = _ulp_errors(got, x, np.log)
    worst = int(np.argmax(err))
    assert err[worst] <= CPU_LOG_MAX_ULP, (
        f"cpu_log({x[worst]!r}) = {got[worst]!r}, log = {np.log(np.float64(x[worst]))!r}: "
        f"{err[worst]:.3g} ulp on {cl_device.name!r}")
    specials = {0.0: -np.inf, -0.0: -np.inf, np.inf: np.inf, 1.0: 0.0}
    for v, want in specials.items():
        assert got[x == v][0] == want, (v, got[x == v])
    assert np.isnan(got[np.isnan(x) | (x < 0)]).all()


_HALF_KERNEL = """
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC %(vec)d
#define IN_T half
#define OUT_T half
#define RAW_T float
#define ACC_T float
#define IN_HALF 1
#define OUT_HALF 1
#define CPU_HALF_BITS 1
%(cpu_vec)s
__kernel void halves(__global const half *h, __global const float *f, __global float *wide,
                     __global float *wide_abs, __global half *narrow) {
    const size_t i = get_global_id(0) * VEC;
    const CPU_V(float) w = CPU_LOAD_ACC(h + i);
    const CPU_V(float) a = CPU_LOAD_ABS_ACC(h + i);
    for (int e = 0; e < VEC; ++e) {
        wide[i + e] = ((const float *)&w)[e];
        wide_abs[i + e] = ((const float *)&a)[e];
    }
    CPU_STORE(CPU_VLOAD(float, f + i), narrow + i);
}
"""


def _rounding_inputs() -> np.ndarray:
    """float32 values whose float16 rounding is decided at the last bit: every finite half, the
    midpoints between neighbours (ties, to even) and the floats on either side of them, the
    overflow edge (65519.99 -> 65504, 65520 -> inf), subnormal halves' midpoints, specials."""
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float64))
    mids = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)  # 12 bits: exact in float32
    assert np.array_equal(mids.astype(np.float64), (finite[1:] + finite[:-1]) / 2)
    rng = np.random.default_rng(20261129)
    return np.concatenate([
        finite.astype(np.float32), mids, np.nextafter(mids, np.float32(np.inf)),
        np.nextafter(mids, np.float32(-np.inf)),
        np.array([65519.996, 65520.0, -65520.0, 65536.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 0.0, -0.0,
                  2.0 ** -25, 2.0 ** -26, 3 * 2.0 ** -26, 1e-30], np.float32),
        rng.standard_normal(1 << 14).astype(np.float32) * np.float32(1000.0),
    ])


@pytest.mark.parametrize("vec", [2, 4, 8, 16])
def test_cpu_half_loads_and_stores_are_exact(cl_device, cl_queue, vec):
    """cpu_vec.h's float16 walk access (CPU_HALF_BITS 1, the CPU_PASSES files' choice): every
    half widened to its float exactly, |x| by CPU_LOAD_ABS_ACC, and floats rounded to halves to
    nearest even as vstore_half rounds them, bit for bit against numpy. Where the compiler
    targets F16C (both PoCLs here) this is vcvtph2ps / vcvtps2ph through clang's builtins
    (CPU_F16C), else the integer widening and vstore_halfn: a wrong rounding immediate, lane
    order or sign mask fails it."""
    limit = probe_device(cl_queue.device).vector_bytes_limit
    if limit is not None and vec * 4 > limit:
        pytest.skip(f"float{vec} is wider than this device's {limit}-byte vectors")
    ctx = cl_queue.context
    src = _HALF_KERNEL % {"vec": vec, "cpu_vec": kernels.kernel_text("cpu_vec.h")}
    prg = cl.Program(ctx, src).build()
    h = np.arange(1 << 16, dtype=np.uint16)
    f = _rounding_inputs()
    n = max(len(h), len(f))
    n += -n % vec
    h = np.concatenate([h, np.zeros(n - len(h), np.uint16)])
    f = np.concatenate([f, np.zeros(n - len(f), np.float32)])
    mf = cl.mem_flags
    hb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=h)
    fb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=f)
    wb, ab = (cl.Buffer(ctx, mf.WRITE_ONLY, n * 4) for _ in range(2))
    nb = cl.Buffer(ctx, mf.WRITE_ONLY, n * 2)
    prg.halves(cl_queue, (n // vec,), None, hb, fb, wb, ab, nb)
    wide, wide_abs = np.empty(n, np.float32), np.empty(n, np.float32)
    narrow = np.empty(n, np.uint16)
    for host, buf in ((wide, wb), (wide_abs, ab), (narrow, nb)):
        cl.enqueue_copy(cl_queue, host, buf)
    cl_queue.finish()

    def same_bits(got, want, what):
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), f"{what}: NaN positions on {cl_device.name!r}"
        bad = np.flatnonzero(got[~nan].view(np.uint32 if got.dtype == np.float32 else np.uint16)
                             != want[~nan].view(np.uint32 if want.dtype == np.float32 else np.uint16))
        assert bad.size == 0, (f"{what}: {bad.size} differ on {cl_device.name!r}, first input "
                               f"{np.flatnonzero(~nan)[bad[0]]}: {got[~nan][bad[0]]!r} != {want[~nan][bad[0]]!r}")

    halves = h.view(np.float16)
    same_bits(wide, halves.astype(np.float32), "widened")
    same_bits(wide_abs, np.abs(halves.astype(np.float32)), "widened |x|")
    with np.errstate(over="ignore"):
        same_bits(narrow.view(np.float16), f.astype(np.float16), "rounded to half")
