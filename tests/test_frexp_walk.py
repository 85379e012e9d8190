"""frexp_walk.h's FREXP_WALK_VALUE (m * 2^e, the rescued products' result) is ldexp, bit for bit.

It no longer calls ldexp: Intel's CPU runtime on hosts without AVX-512 has no ldexp for 32 or
64 floats at once and failed to link every product kernel at those sub-group widths. Its own
scaling (powers of two made from their bits, one rounding) is checked here against numpy's
ldexp on every OpenCL device, float and double, over the mantissas the walks hold (m in
[2^-32, 1], 0, inf, NaN, either sign) and exponents that give normal, subnormal, zero and
infinite results, past the +-2000 where the walks stop tracking.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from clreduce.kernels import kernel_text

_KERNEL = """
__kernel void value(__global const ACC_T *m, __global const long *e, __global ACC_T *out) {
    const size_t i = get_global_id(0);
    out[i] = FREXP_WALK_VALUE(m[i], e[i]);
}
"""


def _source(dtype: str) -> str:
    header = kernel_text("frexp_walk.h")
    fp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "float64" else ""
    acc = "double" if dtype == "float64" else "float"
    return f"{fp64}#define ACC_T {acc}\n#define ACC_BYTES {8 if acc == 'double' else 4}\n#define ACC_IS_FLOAT 1\n" \
           f"{header}\n{_KERNEL}"


def _cases(dtype: str):
    rng = np.random.default_rng(7)
    t = np.dtype(dtype).type
    # mantissas as the walks hold them: products of <= 32 frexp mantissas, renormalised
    m = np.concatenate([rng.uniform(0.5, 1.0, 300), 0.5 ** rng.uniform(0, 32, 300), [1.0, 0.5, 2.0 ** -32]])
    m = np.concatenate([m, -m]).astype(dtype)
    info = np.finfo(dtype)
    lo, hi = info.minexp - info.nmant, info.maxexp  # smallest subnormal's exponent, overflow
    edges = np.array([0, 1, -1, hi - 1, hi, hi + 1, info.minexp, info.minexp - 1, lo, lo - 1, lo + 1, lo - 32,
                      lo + 32, 2 * info.minexp, 2 * info.minexp - 1, 3 * hi, 3 * hi + 1, 2000, -2000, 2100, -2100],
                     np.int64)
    e = np.concatenate([edges, rng.integers(lo - 40, hi + 40, 600), rng.integers(-2100, 2100, 200)])
    mm, ee = np.meshgrid(m, e[:64], indexing="ij")
    pairs_m = np.concatenate([mm.ravel(), m[rng.integers(0, m.size, 4000)]])
    pairs_e = np.concatenate([ee.ravel(), e[rng.integers(0, e.size, 4000)]])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
    pairs_m = np.concatenate([pairs_m, np.repeat(special, edges.size)]).astype(dtype)
    pairs_e = np.concatenate([pairs_e, np.tile(edges, special.size)]).astype(np.int64)
    # below the walks' range, growing only (a negative e may round twice there): tiny and
    # subnormal m need every factor of a large e
    tiny = np.array([info.tiny, info.tiny * 0.75, info.smallest_subnormal, 2.0 ** (info.minexp - 3)], dtype)
    grow = np.array([1, 40, hi, 2 * hi - 1, 2 * hi + 20, 3 * hi - 5, 3 * hi, 2000], np.int64)
    pairs_m = np.concatenate([pairs_m, np.repeat(tiny, grow.size)]).astype(dtype)
    pairs_e = np.concatenate([pairs_e, np.tile(grow, tiny.size)]).astype(np.int64)
    return pairs_m, pairs_e, t


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_walk_value_is_ldexp(cl_device, cl_queue, dtype):
    if dtype == "float64" and not cl_device.double_fp_config:
        pytest.skip(f"{cl_device.name}: no fp64")
    if not (cl_device.single_fp_config if dtype == "float32" else cl_device.double_fp_config) \
            & cl.device_fp_config.DENORM:
        pytest.skip(f"{cl_device.name} flushes {dtype} subnormals")  # cf. README, devices that flush
    m, e, _ = _cases(dtype)
    prg = cl.Program(cl_queue.context, _source(dtype)).build()
    mf = cl.mem_flags
    bm = cl.Buffer(cl_queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=m)
    be = cl.Buffer(cl_queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=e)
    out = np.empty_like(m)
    bo = cl.Buffer(cl_queue.context, mf.WRITE_ONLY, out.nbytes)
    prg.value(cl_queue, (m.size,), None, bm, be, bo)
    cl.enqueue_copy(cl_queue, out, bo)
    want = np.ldexp(m, np.clip(e, -2000, 2000).astype(np.int32))
    bad = ~((out == want) & (np.signbit(out) == np.signbit(want)) | (np.isnan(out) & np.isnan(want)))
    assert not bad.any(), [(float(a), int(b), float(c), float(d)) for a, b, c, d in
                           zip(m[bad][:8], e[bad][:8], out[bad][:8], want[bad][:8])]
