"""numpy references and tolerances for the row ops, shared by the OpenCL and CUDA tests
(importing no GPU library)."""

from __future__ import annotations

import numpy as np

# Tolerances, written once. float32 math: exp/log/rsqrt are within a few ulp in OpenCL
# (not correctly rounded) and an error e in (x - max) becomes a relative error e in
# exp(x - max), so 1e-5 relative covers rows spanning ~100. float16 output is rounded to
# half once (relative 2**-11) and may be subnormal (spacing 6e-8).
TOL = {
    "float32": dict(rtol=1e-5, atol=1e-6),
    "float16": dict(rtol=2e-3, atol=1.2e-7),
    "float64": dict(rtol=1e-12, atol=1e-13),
}
# log_softmax values are differences of magnitude up to the row's spread: absolute error.
LOG_TOL = {"float32": dict(rtol=1e-5, atol=2e-5), "float16": dict(rtol=2e-3, atol=2e-3),
           "float64": dict(rtol=1e-12, atol=1e-12)}
# norms: outputs are O(|w| + |b|); (x - mean) is exact to float32 ulp of x after the shift
NORM_TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float16": dict(rtol=2e-3, atol=2e-3),
            "float64": dict(rtol=1e-11, atol=1e-11)}


# ---- references (scipy.special's formulas, in float64) ----------------------------------------
def ref_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)


def ref_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    t = x - m
    with np.errstate(divide="ignore", invalid="ignore"):
        return t - np.log(np.sum(np.exp(t), axis=axis, keepdims=True))


def ref_rms_norm(x, w=None, eps=1e-6):
    x = x.astype(np.float64)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def ref_layer_norm(x, w=None, b=None, eps=1e-5):
    x = x.astype(np.float64)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    y = y if w is None else y * w
    return y if b is None else y + b


def _close(got, want, dtype, tol, what):
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    with np.errstate(over="ignore"):  # beyond float16's range a stored result is inf too
        want_rounded = want.astype(dtype).astype(np.float64)  # what a correctly rounded result stores
    np.testing.assert_allclose(got.astype(np.float64), want_rounded, err_msg=what, **tol[str(np.dtype(dtype))])


ADVERSARIAL = {
    "all -inf": [-np.inf] * 6,
    "one -inf": [1.0, -np.inf, 2.0, 0.5, -1.0, 3.0],
    "+inf": [1.0, np.inf, 2.0, 0.5, -1.0, 3.0],
    "two +inf": [np.inf, np.inf, 2.0, 0.5, -1.0, 3.0],
    "nan": [1.0, np.nan, 2.0, 0.5, -1.0, 3.0],
    "large offset": [1e30, 1e30 + 1e24, 1e30 - 1e24, 1e30, 1e30, 1e30],
    "huge spread": [3e38, -3e38, 0.0, 1.0, 2.0, 3.0],
    "one element hot": [0.0, 0.0, 100.0, 0.0, 0.0, 0.0],
    "-inf first half": [-np.inf, -np.inf, -np.inf, 1.0, 2.0, 3.0],
    "+inf last": [1.0, 2.0, 3.0, 0.5, -1.0, np.inf],
}
HALF_ROWS = {
    "near 65504": [65504.0, 65000.0, -65504.0, 65504.0, 60000.0, 0.0],
    "half -inf": [-np.inf, 1.0, 2.0, -np.inf, 0.0, 0.0],
}


def ref_quantize(x, axis=-1):
    x32 = x.astype(np.float32) if x.dtype != np.float64 else x
    amax = np.abs(x32).max(axis=axis, keepdims=True)
    # the scale returned is float32, and q divides by it (float64 input: the float64 quotient
    # rounded to float32, then widened again)
    scale = (amax / x32.dtype.type(127)).astype(np.float32).astype(x32.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x32 / scale
    q = np.where(np.isfinite(y), np.clip(np.rint(np.where(np.isfinite(y), y, 0)), -127, 127), 0).astype(np.int8)
    return q, y, np.squeeze(scale, axis)


U32 = 2.0 ** -24  # float32 unit roundoff


def _assert_cumsum_bound(got, x, axis, what):
    """The stated float32 error: |y_i - exact| <= (i + 1) u sum_{j<=i} |x_j| (+ float16 rounding)."""
    exact = np.cumsum(x.astype(np.float64), axis=axis)
    n = np.arange(1, x.shape[axis] + 1, dtype=np.float64).reshape([-1 if a == axis % x.ndim else 1 for a in range(x.ndim)])
    bound = (n + 1) * U32 * np.cumsum(np.abs(x.astype(np.float64)), axis=axis)
    if got.dtype == np.float16:
        bound = bound + np.abs(exact) * 2.0 ** -11 + 6e-8
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - exact)
    if got.dtype == np.float16:
        # prefixes past 65504 overflow, as numpy's float16 cumsum does: an inf of the exact
        # prefix's sign is right where that prefix, within the bound, rounds past 65520
        overflows = np.isinf(got) & (np.sign(got) == np.sign(exact)) & (np.abs(exact) + bound >= 65520)
        err = np.where(overflows, 0.0, err)
    assert np.all(err <= bound), f"{what}: worst excess {np.max(err - bound)}"


def far_first_rows(k, dtype, rng):
    """Rows whose first element lies far from their mean: the sum of (x - x0)^2 overflows
    where that of (x - mean)^2 does not (0 then values near 1e19 in float32, 1e153 in float64,
    each square fits; a row near 1e4 whose first element is -1e19 / -1e153), or cancels ~k
    times the variance (0 then 1e4 +- 1: float32 lost ~2e-4 of it at k = 5000), and a first
    element of 1e7 (1e18) that the rest, N(0, 1) below -1e7 / (k - 1), cancels: split rows had
    added their chunks' sums around the first element, each rounded at (c - x0) * chunk length
    (float32, k = 5000 in three chunks: 6e-5 of the mean of |x| off)."""
    big = 1e19 if dtype == "float32" else 1e153
    far = 1e7 if dtype == "float32" else 1e18
    x = np.stack([big * (1 + 0.01 * rng.standard_normal(k)), 1e4 + rng.standard_normal(k),
                  1e4 + rng.standard_normal(k), rng.standard_normal(k) - far / (k - 1)])
    x[0, 0], x[1, 0], x[2, 0], x[3, 0] = 0.0, -big, 0.0, far
    return x.astype(dtype)


def wild_rows(k, dtype, rng):
    """Rows whose sum of deviations from their first element comes out inf or NaN (row_norm.cl
    WILD) or whose sum of squares overflows, k >= 6, and one plain row last. Returns
    (x, mean, var): numpy's mean (exact, taken in fractions: numpy's own float32 sum overflows
    on rows 5 and 6) and variance (inf where the true one passes the type's range, NaN where
    the row holds an inf or NaN).
      0-4: +inf second, +inf first, -inf first, NaN last, +inf first and -inf fourth
      5:   values of both signs near the maximum (x - x0 overflows)
      6:   the maximum's negative first, the rest near half the maximum (sum(x - x0) overflows)
      7:   half the maximum, spread by 1e-3 of it (no WILD: the sums of squares overflow, and
           the rescued sum of d squared beside them gave inf - inf)"""
    from fractions import Fraction
    top = float(np.finfo(dtype).max)
    x = rng.uniform(1.0, 2.0, (9, k))
    x[0, 1] = x[1, 0] = x[4, 0] = np.inf
    x[2, 0] = x[4, 3] = -np.inf
    x[3, -1] = np.nan
    x[5] = top * rng.uniform(0.5, 0.99, k) * np.where(np.arange(k) % 2, -1.0, 1.0)
    x[6] = top * rng.uniform(0.4, 0.5, k)
    x[6, 0] = -top
    x[7] = top * 0.5 * (1.0 + 1e-3 * rng.uniform(-1.0, 1.0, k))
    x = x.astype(dtype)
    mean = np.array([np.inf, np.inf, -np.inf, np.nan, np.nan]
                    + [float(sum(map(Fraction, r.astype(np.float64).tolist())) / k) for r in x[5:8]]
                    + [x[8].astype(np.float64).mean()])
    var = np.array([np.nan] * 5 + [np.inf] * 3 + [x[8].astype(np.float64).var()])
    return x, mean, var


def flat_write_rows(k, dtype, rng):
    """Adversarial rows for the flat write: row_norm.cl's WILD rows (float16: its largest
    values), rows far from their first element (float32 and float64), a row of one value and
    one with a large offset."""
    if dtype == "float16":
        x = rng.uniform(-65504.0, 65504.0, (3, k))
        x[1, ::5] = 65504.0
        x[2, 7] = -np.inf
        rows = [x]
    else:
        rows = [wild_rows(k, dtype, rng)[0], far_first_rows(k, dtype, rng)]
    rows.append(np.stack([np.full(k, 1e4 + 0.25), 1e3 + rng.standard_normal(k)]))
    return np.concatenate(rows).astype(dtype)


def noncanonical_bools(rng, shape):
    """numpy bools of any byte value, about half of them 0 (False), the rest 1-255 (True):
    numpy reads any nonzero byte as True; a scan that added the bytes gave 255 for one."""
    raw = rng.integers(1, 256, shape).astype(np.uint8)
    raw[rng.random(shape) < 0.5] = 0
    return raw.view(np.bool_)


def ref_norms_past_the_range(x, w=None, b=None):
    """(layer_norm, rms_norm) references of rows whose squares pass even float64's range
    (row_norm.cl SCALED): numpy's formulas of x * 2**-600 (exact in float64) with eps 0, which
    vanishes beside such variances."""
    xs = x.astype(np.float64) * 2.0 ** -600
    with np.errstate(all="ignore"):
        return ref_layer_norm(xs, w, b, eps=0.0), ref_rms_norm(xs, w, eps=0.0)


def check_backward_write_walk(monkeypatch, plans_owner, run) -> None:
    """WALK_BACK (row_common.h) forced on every uncached whole-row plan, checked against the
    references. ``plans_owner``: the backend module whose ``_plans`` memo is replaced for the
    test (plans made here only); ``run(op, x, force)``: the op on the backend, numpy in and out.
    Rows of K = 1237 (most start off the 16-byte grid: a scalar head, runs, a tail) and of
    K = 5 (fewer runs than lanes: lanes past the last run must not enter it)."""
    from clreduce import plan_rowops
    from clreduce.plan_rowops import RowForce

    chosen = []

    def always_back(caps, problem, cache, split, lanes):
        back = cache == "none" and split == 1 and problem.op in plan_rowops.CUDA_UNCACHED_OPS
        chosen.append(back)
        return back

    monkeypatch.setattr(plan_rowops, "cuda_walk_back", always_back)
    monkeypatch.setattr(plans_owner, "_plans", type(plans_owner._plans)(lambda: 64))
    force = RowForce(cache="none", split=1)
    for k in (1237, 5):
        x = (np.random.default_rng(k).standard_normal((9, k + 1)).astype(np.float32) * 3)[:, 1:]
        what = f"K={k} WALK_BACK"
        _close(run("softmax", x, force), ref_softmax(x), "float32", TOL, what)
        _close(run("log_softmax", x, force), ref_log_softmax(x), "float32", LOG_TOL, what)
        _close(run("rms_norm", x, force), ref_rms_norm(x), "float32", NORM_TOL, what)
        _close(run("layer_norm", x, force), ref_layer_norm(x), "float32", NORM_TOL, what)
        xh = x.astype(np.float16)
        _close(run("softmax", xh, force), ref_softmax(xh), "float16", TOL, what)
        _close(run("log_softmax", xh, force), ref_log_softmax(xh), "float16", LOG_TOL, what)
    assert any(chosen), "no plan took the backward walk: the test checked nothing"


def rows_past_the_range(op: str, dtype: str, k: int):
    """(x, exact prefixes as float64) of three rows: ordinary values between two rows
    whose prefixes stay inside the float range while partials of aligned blocks leave it.
    The pattern 0, -1, 1, 1, -1, -1, 1, 1, -1, ... (units of `big`): every prefix is -1, 0 or
    1 unit, but any block of 2+ elements starting at 2 mod 4 adds 1 + 1 or -1 - 1 (one unit
    is most of the range): lanes' runs, team prefixes and chunk totals all cross it.
    cumprod: the same with big, 1/big and 1 for 1, -1 and 0 units (crossing to inf and to 0)."""
    units = np.concatenate([[0], np.tile([-1, 1, 1, -1], k // 4 + 1)])[:k]
    small = np.linspace(0.5, 1.5, k)
    if op == "cumsum":
        big = np.asarray({"float32": 3e38, "float64": 1.5e308}[dtype], dtype)
        rows = np.stack([units * big, small, -units * big]).astype(dtype)
        want = np.stack([np.cumsum(units) * np.float64(big), np.cumsum(rows[1].astype(np.float64)),
                         -np.cumsum(units) * np.float64(big)])
    else:
        big = np.asarray({"float32": 1e30, "float64": 1e300}[dtype], dtype)
        pattern = np.where(units == 1, big, np.where(units == -1, 1 / big, 1)).astype(dtype)
        wave = np.exp(0.5 * np.sin(np.arange(k)))  # prefixes stay between e^-1.1 and e^1.1
        rows = np.stack([pattern, wave.astype(dtype), pattern[::-1]])
        want = np.cumprod(rows.astype(np.float64), -1)  # in order: stays inside float64's range
    return rows, want


def assert_scan_past_the_range(op: str, dtype: str, k: int, got, x, want, what: str) -> None:
    """The checks of a rows_past_the_range scan: finite everywhere; cumsum's rows 0 and 2
    (prefixes of -1, 0, 1 units: exact in any order) equal, row 1 within the stated bound;
    cumprod within the product bound (k + 1) ulp."""
    assert np.isfinite(got).all(), what
    if op == "cumsum":
        np.testing.assert_array_equal(got[[0, 2]], want[[0, 2]].astype(dtype), err_msg=what)
        _assert_cumsum_bound(got[1:2], x[1:2], -1, what)
    else:
        np.testing.assert_allclose(got, want, rtol=(k + 1) * np.finfo(dtype).eps / 2 * 1.01, err_msg=what)
