"""Differential tests against numpy with hypothesis: random shapes (0-4 dims, zero-size and
size-1 axes), random axes (None, int, tuples), keepdims, every public reduction, every
supported dtype, NaN/inf sprinkled in, on every OpenCL device and forced plan variant.

Profiles: "ci" (default) runs a bounded number of examples per device; "slow" (``--slow`` or
CLREDUCE_SLOW=1, or CLREDUCE_HYPOTHESIS_EXAMPLES=N) runs at least 10 000.

Tolerances for the ops beyond sum/mean/max/min are in ``DIFF_TOLERANCE`` below, each with
its reason; sum/mean share conftest's TOLERANCE and sum_rtol (eps of the accumulator, the README's bound).

Adversarial data (``ADVERSARIAL``: large offsets, alternating magnitudes, cancellation,
float16 near 65504, subnormals, integer extremes, non-canonical bools) joins the hypothesis
draws and has its own matrix (``test_adversarial_data``, with the issue's sequential forced
variant). Cases awaiting a kernel fix are excused in one place: ``PENDING_KERNEL_FIXES``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import clreduce
from clreduce.plan import UnsupportedOnDevice

from conftest import DEVICES, TOLERANCE, column_variants, is_strided, plan_variants, pyopencl_view, sum_rtol

_SLOW = os.environ.get("CLREDUCE_SLOW", "") not in ("", "0")
_EXAMPLES = int(os.environ.get("CLREDUCE_HYPOTHESIS_EXAMPLES", "10000" if _SLOW else "60"))
settings.register_profile("clreduce", max_examples=_EXAMPLES, deadline=None, derandomize=not _SLOW,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])

DTYPES = ["float32", "float16", "float64", "int32", "int8", "uint8", "int64", "uint16", "bool"]
OPS = ["sum", "mean", "prod", "max", "min", "any", "all", "count_nonzero", "nansum", "nanmean", "nanmax",
       "nanmin", "var", "std", "argmax", "argmin", "logsumexp", "norm"]
EXACT_OPS = {"max", "min", "nanmax", "nanmin", "any", "all", "count_nonzero", "argmax", "argmin"}

# Bounds on |clreduce - reference| (reference in float64, or long double for float64 input),
# K = reduced count, eps = the accumulator's epsilon (float32 for float16 input); the README's
# Tolerances section states the same, with the reasons:
#  - sum-like (sum, nansum, mean, nanmean, norm ord 1): sum|x| * min(K, terms) * eps, with
#    terms 58 (rows) or 130 (strided axes): conftest.sum_rtol. Divided by K for means, plus
#    one rounding of the mean; + 1 ulp of the output dtype (final rounding).
#  - prod: every multiply rounds once: K*eps*|prod| + 1 ulp (data kept near 1, see below).
#  - var: the kernel subtracts a pilot (the first element of the reduced slice) and runs a
#    compensated Welford/Chan: VAR_TERMS * eps * sum((x - pilot)^2) / max(K - ddof, 1), eps of
#    the accumulator (float32 for integer input on a device without fp64). std: d(sqrt v) =
#    dv / (2 sqrt v), or sqrt(dv) at 0.
#  - norm ord 2: the sum bound on the squares (plus one rounding of each square), then sqrt
#    halves the relative error.
#  - logsumexp: K*eps relative to the shifted sum, + eps*|result| (the final log and add).
DIFF_TOLERANCE = {"var_terms": 16.0}

# ---- pending kernel fixes: the ONE place that excuses a case ----------------------------------
# Cases here are known to miss the documented bounds until a kernel fix lands; they run as
# xfail(strict=False) in test_adversarial_data and are left out of the hypothesis run (whose
# examples cannot be xfailed one by one). Delete an entry when its fix lands.
PENDING_KERNEL_FIXES: dict[str, str] = {}


def pending_kernel_fix(kind: str, op: str, dtype: np.dtype) -> str | None:
    """The PENDING_KERNEL_FIXES reason that covers this adversarial case, or None."""
    return None


# Adversarial data (issue 8 item 8): each kind defeats a naive reduction in its own way.
ADVERSARIAL = {
    "offset": "a large common offset plus N(0,1) noise (var/mean cancellation)",
    "alternating": "alternating big and big+8: a sequential float32 sum stalls",
    "cancel": "+a/-a pairs of large values plus small ones: the sum is tiny next to sum|x|",
    "f16_top": "float16 near 65504: float16 accumulation overflows (float32 must not)",
    "subnormal": "subnormal magnitudes: a device that flushes them to zero loses everything",
    "int_extreme": "integers at the type's extremes: sums wrap exactly as numpy's",
    "bool_bytes": "bool bytes 0..255: any nonzero byte is True",
}


def adversarial(kind: str, dtype: np.dtype, shape, seed: int) -> np.ndarray | None:
    """Data of ``kind`` for ``dtype`` (None where the kind does not apply to the dtype)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if kind == "bool_bytes":
        return rng.integers(0, 256, n, dtype=np.uint8).view(np.bool_).reshape(shape) if dtype == np.bool_ else None
    if kind == "int_extreme":
        if dtype.kind not in "iu":
            return None
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, 1, info.max // 2], dtype=dtype)
        return rng.choice(pool, size=shape)
    if dtype.kind != "f":
        return None
    big = {"float16": 1000.0, "float32": 1e6, "float64": 1e12}[dtype.name]
    if kind == "offset":
        x = big + rng.standard_normal(n)
    elif kind == "alternating":
        top = {"float16": 1000.0, "float32": 1e8, "float64": 1e15}[dtype.name]
        x = np.where(np.arange(n) % 2 == 0, top, top + 8.0)
    elif kind == "cancel":
        half = big * rng.uniform(1, 2, n // 2)
        x = np.concatenate([half, -half, rng.standard_normal(n - 2 * (n // 2))])
        x = x + rng.standard_normal(n)
        rng.shuffle(x)
    elif kind == "f16_top":
        if dtype != np.float16:
            return None
        x = rng.uniform(60000, 65504, n) * rng.choice([1.0, 1.0, -1.0], n)
    elif kind == "subnormal":
        tiny = float(np.finfo(dtype).smallest_subnormal)
        x = tiny * rng.integers(-1000 if dtype != np.float16 else -100, 1000 if dtype != np.float16 else 100, n)
    else:
        raise ValueError(kind)
    return x.astype(dtype).reshape(shape)


def _eps(dtype: np.dtype) -> float:
    acc = TOLERANCE["acc"].get(dtype.name, "float64")
    return TOLERANCE["eps"][acc]


def _axis_strategy(ndim: int):
    if ndim == 0:
        return st.just(None)
    single = st.integers(-ndim, ndim - 1)
    many = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)
    return st.one_of(st.just(None), single, many)


@st.composite
def cases(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    op = draw(st.sampled_from(OPS))
    ndim = draw(st.integers(0, 4))
    # one axis may be long enough to reach split and multi-lane plans; the rest stay small
    dims = [draw(st.integers(0, 6)) for _ in range(ndim)]
    if ndim and draw(st.booleans()):
        dims[draw(st.integers(0, ndim - 1))] = draw(st.integers(7, 3000))
    shape = tuple(dims)
    axis = draw(_axis_strategy(ndim))
    if op in ("argmax", "argmin") and isinstance(axis, tuple):
        axis = axis[0] if len(axis) == 1 else None
    if op == "norm" and (isinstance(axis, tuple) or (axis is None and ndim > 1)):
        axis = None if ndim <= 1 else -1
    keepdims = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    specials = draw(st.sampled_from(["none", "none", "nan", "inf", "mixed"] + list(ADVERSARIAL)))
    if specials in ADVERSARIAL and (adversarial(specials, dtype, (1,), 0) is None
                                    or pending_kernel_fix(specials, op, dtype)
                                    or op in ("prod", "logsumexp")):
        specials = "none"  # not for this dtype/op, or excused above (test_adversarial_data has it)
    ord_ = draw(st.sampled_from([None, 1, 2, np.inf, -np.inf])) if op == "norm" else None
    return dtype, op, shape, axis, keepdims, seed, specials, ord_


def _make(dtype: np.dtype, shape, seed: int, specials: str, op: str) -> np.ndarray:
    if specials in ADVERSARIAL:
        return adversarial(specials, dtype, shape, seed)
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if op == "prod":  # small factors: int64 products wrap identically in any order
            lo, hi = (-2, 3) if dtype.kind == "i" else (0, 3)
        else:
            lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=False).astype(dtype)
    if op == "prod":  # near 1: no overflow/underflow whichever order the products take
        x = 1.0 + 0.05 * rng.standard_normal(shape)
    elif op == "logsumexp":
        x = 20.0 * rng.standard_normal(shape)
    else:
        x = rng.standard_normal(shape) * 10.0 + rng.choice([0.0, 100.0])
    x = x.astype(dtype)
    if x.size and specials != "none":
        flat = x.reshape(-1)
        n = max(1, flat.size // 50)
        where = rng.choice(flat.size, size=n, replace=False)
        fill = {"nan": [np.nan], "inf": [np.inf, -np.inf], "mixed": [np.nan, np.inf, -np.inf]}[specials]
        flat[where] = rng.choice(fill, size=n)
    return x


def _reference(op: str, x: np.ndarray, axis, keepdims: bool, ord_):
    hi = np.longdouble if x.dtype == np.float64 else np.float64
    xr = x.astype(hi) if x.dtype.kind == "f" else x
    if op == "logsumexp":
        xf = x.astype(hi)
        m = np.max(xf, axis=axis, keepdims=True, initial=-np.inf)  # empty: log(0) = -inf
        shift = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            r = np.log(np.sum(np.exp(xf - shift), axis=axis, keepdims=True)) + shift
        return r if keepdims else np.squeeze(r, axis=axis)
    if op == "norm":
        return np.linalg.norm(x.astype(hi), ord=ord_, axis=axis, keepdims=keepdims)
    if op in ("var", "std") and x.size:
        # long double less the pilot (var is shift-invariant): a reference mean of data at
        # 1e15 erred by 5e-5 in long double, enough to move var by more than its bound
        xl = x.astype(np.longdouble)
        pilot = xl
        for a in (range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))):
            pilot = np.take(pilot, [0], axis=a)
        with np.errstate(invalid="ignore"):
            return getattr(np, op)(xl - pilot, axis=axis, keepdims=keepdims)
    if op == "count_nonzero":
        return np.count_nonzero(x, axis=axis, keepdims=keepdims)
    return getattr(np, op)(xr, axis=axis, keepdims=keepdims)


def _tolerance(op, x, ref, out_dtype, axis, keepdims, ord_, ddof=0.0, fp64=True):
    eps = _eps(x.dtype if x.dtype.kind == "f" else np.dtype("float64"))
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    k = max(1, int(np.prod([x.shape[a] for a in axes])))
    xf = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    red = dict(axis=axis, keepdims=keepdims)
    abs_ref = np.abs(np.asarray(ref, dtype=np.float64))
    with np.errstate(all="ignore"):
        ulp = np.spacing(np.abs(np.asarray(ref, dtype=np.float64)).astype(out_dtype)).astype(np.float64)
    # README's float sum bound: sum|x| * min(K, terms) * eps (conftest.sum_rtol, with the reason)
    rel = sum_rtol(k, TOLERANCE["acc"].get(x.dtype.name, "float64"), is_strided(x.shape, axis))
    if op in ("sum", "nansum") or (op == "norm" and ord_ == 1):
        tol = rel * np.sum(np.abs(xf), **red)
    elif op in ("mean", "nanmean"):
        tol = rel * np.sum(np.abs(xf), **red) / k + eps * abs_ref
    elif op == "prod":
        tol = 2 * k * eps * abs_ref
    elif op in ("var", "std"):
        # README: VAR_TERMS * eps(acc) * sum((x - pilot)^2) / max(K - ddof, 1), the pilot being the
        # element at index 0 of the reduced axes (reduce_state.cl shifts every element by it)
        pilot = xf
        for a in axes:
            if pilot.shape[a]:  # an empty reduced axis has no pilot (numpy's var is NaN there)
                pilot = np.take(pilot, [0], axis=a)
        var_eps = eps if x.dtype.kind == "f" or fp64 else TOLERANCE["eps"]["float32"]
        var_tol = DIFF_TOLERANCE["var_terms"] * var_eps * np.sum((xf - pilot) ** 2, **red) / max(k - ddof, 1)
        if op == "var":
            tol = var_tol
        else:
            tol = np.where(abs_ref > 0, var_tol / (2 * np.where(abs_ref > 0, abs_ref, 1)), np.sqrt(var_tol))
    elif op == "norm":  # ord 2: the sum bound on the squares (one more rounding each), halved by sqrt
        sq_tol = (rel + eps) * np.sum(xf * xf, **red)
        tol = np.where(abs_ref > 0, sq_tol / (2 * np.where(abs_ref > 0, abs_ref, 1)), np.sqrt(sq_tol))
    elif op == "logsumexp":
        tol = (k + 2) * eps * (1 + abs_ref)
    else:
        tol = 0.0
    return np.asarray(tol, dtype=np.float64) + ulp


def _check(op, x, got, axis, keepdims, ord_, fp64=True):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref = _reference(op, x, axis, keepdims, ord_)
        want_dtype = (np.asarray(getattr(np, op)(x, axis=axis, keepdims=keepdims)).dtype
                      if op not in ("logsumexp", "norm") else None)
    got_a = np.asarray(got)
    if want_dtype is not None:
        assert got_a.dtype == want_dtype, f"{op} dtype {got_a.dtype} != numpy's {want_dtype}"
    assert got_a.shape == np.shape(ref), f"{op} shape {got_a.shape} != {np.shape(ref)}"
    if op in EXACT_OPS or (x.dtype.kind in "biu" and op in ("sum", "prod", "nansum")):
        if got_a.dtype.kind == "f":
            np.testing.assert_array_equal(got_a, np.asarray(ref).astype(got_a.dtype), err_msg=op)
        else:
            np.testing.assert_array_equal(got_a, np.asarray(ref), err_msg=op)
        return
    out_dtype = got_a.dtype
    ref_out = np.asarray(ref).astype(np.float64)
    with np.errstate(all="ignore"):
        ref_cast = ref_out.astype(out_dtype).astype(np.float64)
    g = got_a.astype(np.float64)
    special = ~np.isfinite(ref_cast) | ~np.isfinite(ref_out)
    np.testing.assert_array_equal(np.where(special, g, 0.0), np.where(special, ref_cast, 0.0),
                                  err_msg=f"{op}: NaN/inf differ")
    tol = _tolerance(op, x, ref_out, out_dtype, axis, keepdims, ord_, fp64=fp64)
    with np.errstate(invalid="ignore"):
        diff = np.where(special, 0.0, np.abs(g - ref_cast))
    bad = diff > np.where(special, 0.0, tol)
    assert not np.any(bad), f"{op} {x.dtype} {x.shape} axis={axis}: got {g[bad][:3]} ref {ref_cast[bad][:3]} tol {np.broadcast_to(tol, bad.shape)[bad][:3]}"


def _numpy_raises(op, x, axis, keepdims, ord_):
    """The exception type numpy raises for this call, or None."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if op == "logsumexp":
                return None  # an empty reduction is -inf (scipy.special.logsumexp, torch.logsumexp)
            if op == "norm":
                np.linalg.norm(x.astype(np.float64), ord=ord_, axis=axis, keepdims=keepdims)
            elif op == "count_nonzero":
                np.count_nonzero(x, axis=axis, keepdims=keepdims)
            else:
                getattr(np, op)(x, axis=axis, keepdims=keepdims)
    except Exception as exc:  # noqa: BLE001
        return type(exc)
    return None


def _call_like_numpy(op, arg, x, axis, keepdims, ord_, variant=None, **kwargs):
    """clreduce's ``op`` of ``arg`` (``x`` itself, or ``x`` on a device). Where numpy raises on
    ``x``, the same exception type is checked for and None returned; a call this device or
    forced variant cannot make is dropped from the draws (hypothesis ``assume``)."""
    kwargs = dict(kwargs, keepdims=keepdims)
    if op == "norm":
        kwargs["ord"] = ord_
    expected_error = _numpy_raises(op, x, axis, keepdims, ord_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if expected_error is not None:
            with pytest.raises(expected_error):
                getattr(clreduce, op)(arg, axis=axis, **kwargs)
            return None
        try:
            return getattr(clreduce, op)(arg, axis=axis, **kwargs)
        except UnsupportedOnDevice:
            # a forced variant this op/dtype cannot use here, or integer logsumexp without fp64
            assume(False)
        except ValueError as exc:
            # a column variant's work-group size that a row plan on this device rejects
            if variant is None or not str(exc).startswith("wg_size="):
                raise
            assume(False)
    return None  # not reached: assume(False) raises


@pytest.mark.parametrize("device_index", range(len(DEVICES)), ids=[d.id for d in DEVICES])
def test_matches_numpy(device_index):
    found = DEVICES[device_index]
    variants = [v.force for v in plan_variants(found.caps)] + [v.force for v in column_variants(found.caps)]

    @settings(settings.get_profile("clreduce"))
    @given(case=cases(), variant=st.sampled_from(variants))
    def run(case, variant):
        dtype, op, shape, axis, keepdims, seed, specials, ord_ = case
        if dtype == np.float64 and not found.caps.fp64:
            assume(False)
        x = _make(dtype, shape, seed, specials, op)
        before = x.copy()
        got = _call_like_numpy(op, x, x, axis, keepdims, ord_, variant, device=found.device, force=variant)
        if got is None:
            return
        np.testing.assert_array_equal(x, before)  # the input is never modified
        _check(op, x, got, axis, keepdims, ord_, fp64=found.caps.fp64)

    run()


# ---- the same draws on pyopencl arrays: C order, transposed (Fortran order), strided --------
# pyopencl arrays reach paths numpy input does not: device-side gathers, and the API's own
# elementwise steps on the caller's array (bool canonicalisation, integer norm's float64 cast,
# float16 rounding), which once read a transposed array in memory order (a silent transpose).

_LAYOUT_EXAMPLES = _EXAMPLES


@pytest.mark.parametrize("device_index", range(len(DEVICES)), ids=[d.id for d in DEVICES])
def test_pyopencl_layouts_match_numpy(device_index):
    from clreduce.backends.opencl import queue_for

    found = DEVICES[device_index]
    queue = queue_for(found.device)

    @settings(settings.get_profile("clreduce"), max_examples=_LAYOUT_EXAMPLES)
    @given(case=cases(), layout=st.sampled_from(["c", "transposed", "strided"]))
    def run(case, layout):
        dtype, op, shape, axis, keepdims, seed, specials, ord_ = case
        assume(len(shape) >= 1 and (found.caps.fp64 or (dtype != np.float64 and not (
            op == "norm" and dtype.kind in "iu"))))  # no float64 kernels for pyopencl's casts there
        x = _make(dtype, shape, seed, specials, op)
        got = _call_like_numpy(op, pyopencl_view(queue, x, layout), x, axis, keepdims, ord_)
        if got is None:
            return
        host = got.get() if type(got).__module__.startswith("pyopencl") else got
        _check(op, x, host, axis, keepdims, ord_, fp64=found.caps.fp64)

    run()


# ---- adversarial data, every kind x op x dtype, default plan and the sequential variant --------

ADV_OPS = ["sum", "mean", "nansum", "nanmean", "var", "std", "max", "min", "argmax", "argmin", "prod",
           "any", "all", "count_nonzero", "norm"]
ADV_DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int32", "int64", "uint64", "bool"]
# (shape, axis): a long contiguous row (multi-lane / split plans), strided columns
ADV_LAYOUTS = [((3, 4099), -1), ((1031, 3), 0)]
SEQUENTIAL = {"sg_mode": "local", "strategy": "rows_per_sg", "vec": 1}  # the forced variant


ADV_SAMPLE_EVERY = 5  # the default run takes every 5th case (all of them with --slow)


def _adversarial_params():
    index = 0
    for kind in ADVERSARIAL:
        for dtype in ADV_DTYPES:
            if adversarial(kind, np.dtype(dtype), (1,), 0) is None:
                continue
            for op in ADV_OPS:
                if op == "prod" and np.dtype(dtype).kind == "f":
                    continue  # products of these magnitudes only overflow or underflow
                reason = pending_kernel_fix(kind, op, np.dtype(dtype))
                marks = (pytest.mark.xfail(strict=False, reason=reason),) if reason else ()
                if index % ADV_SAMPLE_EVERY:
                    marks += (pytest.mark.slow,)
                index += 1
                yield pytest.param(kind, dtype, op, marks=marks, id=f"{kind}-{dtype}-{op}")


@pytest.mark.parametrize("kind, dtype, op", list(_adversarial_params()))
def test_adversarial_data(cl_device, cl_caps, kind, dtype, op):
    dtype = np.dtype(dtype)
    if dtype == np.float64 and not cl_caps.fp64:
        pytest.skip("no fp64 on this device")
    for layout_index, (shape, axis) in enumerate(ADV_LAYOUTS):
        x = adversarial(kind, dtype, shape, seed=layout_index)
        before = x.copy()
        for force in (None, SEQUENTIAL):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    got = getattr(clreduce, op)(x, axis=axis, device=cl_device, force=force)
                except UnsupportedOnDevice:
                    continue  # e.g. the sequential variant's vec on a device that cannot
            np.testing.assert_array_equal(x.view(np.uint8), before.view(np.uint8))
            _check(op, x, got, axis, False, None, fp64=cl_caps.fp64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsumexp_near_zero_keeps_tiny_terms(cl_device, cl_caps, dtype):
    """Issue 8 item 4: m + log1p(sum of the non-max terms) keeps exp(-40) next to 1."""
    if dtype == "float64" and not cl_caps.fp64:
        pytest.skip("no fp64 on this device")
    for x in ([0.0, -40.0], [-40.0, 0.0, -45.0], [0.0] + [-30.0] * 3000):
        x = np.array(x, dtype)
        xl = np.sort(x.astype(np.longdouble))
        want = xl[-1] + np.log1p(np.sum(np.exp(xl[:-1] - xl[-1])))  # log(1 + tiny) would round
        for force in (None, SEQUENTIAL):
            got = clreduce.logsumexp(x, device=cl_device, force=force)
            eps = np.finfo(dtype).eps
            # relative, as DIFF_TOLERANCE's logsumexp: (K + 2) eps (exp and adds), + 1 for the log1p
            assert abs(float(got) - float(want)) <= (x.size + 3) * eps * abs(float(want)), (x[:3], force, got, want)
