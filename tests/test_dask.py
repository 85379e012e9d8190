"""clreduce on dask arrays: the threaded scheduler and a 2-process LocalCluster on PoCL.

Every result is compared with numpy on the computed array by test_differential's ``_check``
(its DIFF_TOLERANCE and conftest's TOLERANCE: K*eps bounds that hold for any summation
order, hence for any tree of partial states). Chunkings: uneven blocks everywhere, one
block, blocks only along the reduced axes, only across them, and a zero-length block.

Sampling: building OpenCL programs for each new (op, dtype, block shape) is where this file's
time goes, so by default each op runs once on the threaded scheduler on PoCL (chunking,
dtype, axis and keepdims rotate: every chunking meets 3-4 ops), then the same cells on the
cluster's PoCL workers, which find those programs in pyopencl's disk cache; the focused
tests below add ties, NaNs, deep trees, dtype=, ddof, empties.
``--slow`` runs every op x chunking x dtype on the threaded scheduler and every op x
chunking on the cluster (axis and keepdims rotating).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import clreduce  # noqa: E402
from conftest import DEVICES, seed_for  # noqa: E402
from test_differential import DTYPES, OPS, _check, _make, _tolerance  # noqa: E402

SHAPE = (23, 31, 7)
CHUNKINGS = ("uneven", "one", "along", "across", "zero_block")
AXES = (None, 0, -1, (0, 2), 1, (1, 2))
_SLOW = pytest.mark.slow


def _split(d: int) -> tuple:
    """Uneven block sizes for a dimension of length d (last block of 1 where d allows)."""
    parts = (d // 3, d - d // 3 - 1, 1) if d >= 3 else (d,)
    return tuple(p for p in parts if p > 0)


def _chunks(shape, axes, kind):
    red = set(range(len(shape))) if axes is None else set(axes)
    if kind == "one":
        return shape
    if kind == "uneven":
        return tuple(_split(d) for d in shape)
    if kind == "along":
        return tuple(_split(d) if i in red else d for i, d in enumerate(shape))
    if kind == "across":
        return tuple(d if i in red else _split(d) for i, d in enumerate(shape))
    first = min(red)  # zero_block: an empty block in front of a reduced axis
    return tuple(((0,) + _split(d)) if i == first else _split(d) for i, d in enumerate(shape))


def _axis_for(op, axis):
    """The axis argument this op takes (argmax: one axis or None; norm: one axis)."""
    if op in ("argmax", "argmin") and isinstance(axis, tuple):
        return axis[0]
    if op == "norm":
        return -1 if axis is None or isinstance(axis, tuple) else axis
    return axis


def _norm_axes(op, axis, ndim):
    if axis is None:
        return None
    return tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def _case(op, dtype, axis, keepdims, chunking, seed, specials="mixed", shape=SHAPE):
    dtype = np.dtype(dtype)
    x = _make(dtype, shape, seed, specials if dtype.kind == "f" else "none", op)
    axis = _axis_for(op, axis)
    chunks = _chunks(shape, _norm_axes(op, axis, len(shape)), chunking)
    return x, da.from_array(x, chunks=chunks), axis


# The threaded cases name PoCL (a selector string, passed to every block's call) and the
# cluster's default cases are the same cells on PoCL workers, so the workers find the
# programs in pyopencl's on-disk cache instead of building them again, twice.
_POCL = "pocl" if any(d.id == "pocl" for d in DEVICES) else None


def _run(op, darr, axis, keepdims, compute, ord_=None, device=None):
    kwargs = dict(axis=axis, keepdims=keepdims)
    if device is not None:
        kwargs["device"] = device
    if op == "norm":
        kwargs["ord"] = ord_
    lazy = getattr(clreduce, op)(darr, **kwargs)
    assert isinstance(lazy, da.Array), f"{op} returned {type(lazy).__name__}, not a lazy dask array"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's empty-slice warnings, checked elsewhere
        return compute(lazy)


def _threads(lazy):
    return lazy.compute(scheduler="threads")


# ---- the threaded scheduler: every op over the chunkings ----------------------------------------

# the default run's dtypes: each new (op, dtype, block shape) builds OpenCL programs, which is
# what this file's time goes into; --slow adds test_differential's full DTYPES list
_DEFAULT_DTYPES = ("float32", "int32", "float16", "float64", "bool", "uint8")


def _ord(op, seed):
    return {0: None, 1: 1, 2: np.inf, 3: -np.inf, 4: 0}[seed % 5] if op == "norm" else None


def _default_cell(oi, ci, dtype, ai, keepdims) -> bool:
    # one cell per op; chunking, dtype, axis and keepdims rotate
    return (ci == oi % len(CHUNKINGS) and dtype == _DEFAULT_DTYPES[oi % len(_DEFAULT_DTYPES)]
            and ai == (oi // 2) % len(AXES) and keepdims == bool(oi % 2))


def _threaded_params():
    # --slow: every op x chunking x dtype, axis and keepdims rotating (810 cells)
    params = []
    for oi, op in enumerate(OPS):
        for ci, chunking in enumerate(CHUNKINGS):
            for di, dtype in enumerate(DTYPES):
                for ai, axis in enumerate(AXES):
                    for keepdims in (False, True):
                        default = _default_cell(oi, ci, dtype, ai, keepdims)
                        slow = ai == (oi + ci + di) % len(AXES) and keepdims == bool((oi + ci + di) % 2)
                        if default or slow:
                            params.append(pytest.param(op, chunking, dtype, axis, keepdims,
                                                       id=f"{op}-{chunking}-{dtype}-{axis}-{'keep' if keepdims else 'drop'}",
                                                       marks=() if default else (_SLOW,)))
    return params


@pytest.mark.parametrize("op, chunking, dtype, axis, keepdims", _threaded_params())
def test_threaded_matches_numpy(op, chunking, dtype, axis, keepdims):
    seed = seed_for(op, chunking, dtype, axis, keepdims)
    ord_ = _ord(op, seed)
    x, darr, axis = _case(op, dtype, axis, keepdims, chunking, seed)
    got = _run(op, darr, axis, keepdims, _threads, ord_, device=_POCL)
    _check(op, x, got, axis, keepdims, ord_)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_arg_ties_and_nans_across_blocks(op, axis):
    # few distinct values: the extreme occurs in many blocks, first occurrence must win;
    # NaNs in several blocks: the first NaN wins, as in numpy
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, size=(20, 30)).astype(np.float32)
    darr = da.from_array(x, chunks=(6, 7))
    np.testing.assert_array_equal(_threads(getattr(clreduce, op)(darr, axis=axis)), getattr(np, op)(x, axis=axis))
    x[[3, 15, 19], [20, 2, 29]] = np.nan
    darr = da.from_array(x, chunks=(6, 7))
    np.testing.assert_array_equal(_threads(getattr(clreduce, op)(darr, axis=axis)), getattr(np, op)(x, axis=axis))


def test_concurrent_blocks_on_one_device():
    # 4 threads reducing same-shaped blocks share each cached kernel: before its lock, the
    # interleaved set_args/enqueue gave INVALID_KERNEL_ARGS or garbage indices (most runs of 15 rounds)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, size=(48, 56)).astype(np.float32)
    darr = da.from_array(x, chunks=(6, 7))
    for _ in range(15):
        got_arg, got_sum = dask.compute(clreduce.argmax(darr, axis=0), clreduce.sum(darr, axis=0),
                                        scheduler="threads", num_workers=4)
        np.testing.assert_array_equal(got_arg, np.argmax(x, axis=0))
        np.testing.assert_array_equal(got_sum, np.sum(x, axis=0))


@pytest.mark.parametrize("op", ["mean", "var", "argmax", "logsumexp", "nanmean", "norm"])
def test_deep_tree_split_every(op):
    # 16 blocks along the reduced axis, 2 per merge: four levels of combine
    x = _make(np.dtype("float32"), (64, 5), 3, "none", op)
    darr = da.from_array(x, chunks=(4, 5))
    lazy = getattr(clreduce, op)(darr, axis=0, split_every=2)
    assert len(lazy.dask.layers) >= 5, "expected a multi-level tree"
    _check(op, x, _threads(lazy), 0, False, None)


@pytest.mark.parametrize("ord_, axis", [(None, None), (None, (1,)), (2, 0), (1, 1), (np.inf, 0), (-np.inf, 1),
                                         (0, 0)])
def test_norm_forms(ord_, axis):
    # axis=None with ord=None is the 2-norm of the flattened array; a 1-tuple is one axis
    x = _make(np.dtype("float32"), (17, 12), 9, "none", "norm")
    x[3, 4] = 0.0
    darr = da.from_array(x, chunks=(5, 7))
    got = _threads(clreduce.norm(darr, ord=ord_, axis=axis))
    _check("norm", x, got, axis, False, ord_)
    with pytest.raises(ValueError, match="matrix norms"):
        clreduce.norm(darr, ord=1)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "nansum", "nanmean", "var", "std"])
def test_dtype_argument(op):
    x = _make(np.dtype("float32"), (19, 23), 5, "none", op)
    darr = da.from_array(x, chunks=(7, 9))
    got = _threads(getattr(clreduce, op)(darr, axis=1, dtype=np.float64))
    # a float64 accumulation of float32 data is the float64 reduction of the same values
    _check(op, x.astype(np.float64), got, 1, False, None)


def test_integer_dtype_argument_wraps_like_numpy():
    x = np.arange(1000, dtype=np.int32).reshape(40, 25)
    darr = da.from_array(x, chunks=(7, 6))
    got = _threads(clreduce.sum(darr, axis=0, dtype=np.int8))
    np.testing.assert_array_equal(got, np.sum(x, axis=0, dtype=np.int8))
    assert got.dtype == np.int8


def test_integer_means_never_wrap_across_blocks():
    """Block totals of an integer mean are float64, as numpy's integer mean sums: 64-bit
    totals wrapped across blocks (ten of 2**62 in blocks of two gave -9.2e17 for 4.6e18; an
    outside fuzz run, 2026-11-29)."""
    x = np.full(10, 2**62, np.int64)
    assert _threads(clreduce.mean(da.from_array(x, chunks=2))) == np.mean(x)
    u = np.full(10, 2**63, np.uint64)
    assert _threads(clreduce.mean(da.from_array(u, chunks=3))) == np.mean(u)
    r = np.random.default_rng(1).integers(-2**62, 2**62, size=(40, 7))
    got = _threads(clreduce.mean(da.from_array(r, chunks=(8, 3)), axis=0))
    np.testing.assert_allclose(got, np.mean(r, axis=0), rtol=1e-13)


def test_integer_means_on_a_device_without_fp64(monkeypatch):
    """Where a float64 block sum is refused (rusticl, Mali), the block's total comes from its
    mean (no fp64 needed) times its count: no wrap, and no UnsupportedOnDevice where numpy
    input has none."""
    from clreduce import dask_array
    from clreduce.plan import UnsupportedOnDevice

    real = dask_array._clr

    def no_fp64(name, block, spec, **kw):
        if np.dtype(kw.get("dtype") or block.dtype) == np.float64:
            raise UnsupportedOnDevice("float64 needs fp64 (test double)")
        return real(name, block, spec, **kw)

    monkeypatch.setattr(dask_array, "_clr", no_fp64)
    x = np.full(10, 2**62, np.int64)
    assert clreduce.mean(da.from_array(x, chunks=2)).compute(scheduler="sync") == np.mean(x)
    r = np.random.default_rng(1).integers(-2**40, 2**40, size=(40, 7))
    got = clreduce.mean(da.from_array(r, chunks=(8, 3)), axis=0).compute(scheduler="sync")
    np.testing.assert_allclose(got, np.mean(r, axis=0), rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_totals_past_the_range_across_blocks(dtype):
    """Block totals past the float range meet across blocks as numpy input's rescued sum does:
    [3e38, 3e38] and [-3e38, -3e38] in two blocks summed to inf + (-inf) = NaN in the merge
    where clreduce.sum of the same numpy array gives 1 (an outside fuzz run, 2026-11-29):
    float32 block totals are float64 sums now. float16 data: 60000s past float16's range."""
    big = np.float32(3e38) if dtype == "float32" else np.float16(60000)
    x = np.array([big, big, -big, -big, 1], dtype)
    d = da.from_array(x, chunks=2)
    for op, want in (("sum", 1), ("nansum", 1), ("mean", 0.2), ("nanmean", 0.2)):
        got = _threads(getattr(clreduce, op)(d))
        assert got == getattr(clreduce, op)(x) and got.dtype == getattr(np, op)(x).dtype, op
        np.testing.assert_allclose(got, want, rtol=1e-3)
    p = np.array([1e30, 1e30, 1e-30, 1e-30, 2], np.float32)  # partial products past the range
    assert _threads(clreduce.prod(da.from_array(p, chunks=2))) == clreduce.prod(p) == np.float32(2)


def test_float_totals_on_a_device_without_fp64(monkeypatch):
    """Where a float64 block sum is refused (rusticl, Mali), float32 block totals are summed in
    float32 and merged in float64: the result still meets numpy's tolerance."""
    from clreduce import dask_array
    from clreduce.plan import UnsupportedOnDevice

    real = dask_array._clr
    asked = []

    def no_fp64(name, block, spec, **kw):
        asked.append(np.dtype(kw.get("dtype") or block.dtype))
        if asked[-1] == np.float64:
            raise UnsupportedOnDevice("float64 needs fp64 (test double)")
        return real(name, block, spec, **kw)

    monkeypatch.setattr(dask_array, "_clr", no_fp64)
    x = np.random.default_rng(3).standard_normal((40, 9)).astype(np.float32)
    for op in ("sum", "mean", "prod", "nansum", "nanmean"):
        got = getattr(clreduce, op)(da.from_array(x, chunks=(7, 4)), axis=0).compute(scheduler="sync")
        np.testing.assert_allclose(got, getattr(np, op)(x.astype(np.float64), axis=0), rtol=2e-5, atol=1e-6)
        assert got.dtype == np.float32
    assert np.dtype(np.float64) in asked and np.dtype(np.float32) in asked  # refused, then the fallback ran


def test_argmax_out_follows_numpys_rules():
    """argmax into a float out= raised for numpy input (numpy's own TypeError) but was cast for
    dask input; an int32 out= is numpy's too."""
    x = np.arange(6.0).reshape(2, 3)
    d = da.from_array(x, chunks=(1, 2))
    with pytest.raises(TypeError, match="cannot write into out"):
        clreduce.argmax(d, axis=1, out=da.zeros(2, dtype=np.float64))
    out = da.zeros(2, dtype=np.int32)
    clreduce.argmin(d, axis=1, out=out)
    assert np.array_equal(_threads(out), np.argmin(x, axis=1)) and _threads(out).dtype == np.int32


def test_mean_totals_wrap_or_overflow_in_numpys_loop():
    """numpy's total lives in the loop dtype before the divide: dtype=int32 wraps it, a float16
    loop overflows past 65504 (dask had divided the 64-bit or float32 total)."""
    y = np.full(4, 2**30, np.int32)
    got = _threads(clreduce.mean(da.from_array(y, chunks=2), dtype=np.int32))
    assert got == np.mean(y, dtype=np.int32) == 0 and got.dtype == np.int32
    h = np.full(4, 30000, np.float32)
    with np.errstate(over="ignore"):
        want = np.mean(h, dtype=np.float16)
    assert np.isinf(want) and np.isinf(_threads(clreduce.mean(da.from_array(h, chunks=2), dtype=np.float16)))
    h16 = np.full(4, 30000, np.float16)  # float16 input: numpy's loop is float32, no overflow
    assert _threads(clreduce.mean(da.from_array(h16, chunks=2))) == np.mean(h16) == 30000


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_zero_d_input_with_axis_zero_follows_numpy(dtype):
    """numpy's ufunc reductions take a 0-d array's int axis 0 / -1 as no axis (the value comes
    back); mean, var and std (and nanmean of non-float input) raise AxisError. Dask input raised
    AxisError for all of them (an outside fuzz run, 2026-11-29)."""
    v = np.array(3, dtype)
    x = da.from_array(v)
    for op in ("sum", "max", "argmax", "nansum", "count_nonzero", "any", "mean", "nanmean", "var"):
        for axis in (0, -1):
            try:
                want = getattr(np, op)(v, axis=axis)
            except np.exceptions.AxisError:
                with pytest.raises(np.exceptions.AxisError):
                    getattr(clreduce, op)(x, axis=axis)
                continue
            got = _threads(getattr(clreduce, op)(x, axis=axis))
            assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (op, axis)


def test_argument_errors_match_numpy_input():
    """An outside fuzz run found dask input accepting what numpy (and numpy input) refuse."""
    x = np.array([1.5, 2.5, 3.5])
    d = da.from_array(x, chunks=2)
    with pytest.raises(TypeError, match="inexact"):
        clreduce.nanmean(d, dtype=np.int32)
    for bad in ("yes", None):
        with pytest.raises(TypeError, match="keepdims"):
            clreduce.sum(d, keepdims=bad)
        with pytest.raises(TypeError):
            np.sum(x, keepdims=bad)
    assert _threads(clreduce.argmax(d, keepdims="yes")).shape == np.argmax(x, keepdims="yes").shape


@pytest.mark.parametrize("chunks", [7, 3])
def test_float16_dtype_rounds_wider_elements_first(chunks):
    """numpy's float16 loop rounds each element to float16 before adding: the report's row gives
    0.2129 where float32 sums of the unrounded values gave 0.223 (an outside fuzz run)."""
    z = np.array([100.03, -100.02, 0.2, 50.01, -50.01, 0.013, 0.0])
    got = _threads(clreduce.sum(da.from_array(z, chunks=chunks), dtype=np.float16))
    assert got.dtype == np.float16 and got == np.sum(z, dtype=np.float16)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_of_an_offset_merges_float64_block_means(op):
    """Chan's merge takes each block's mean in float64 (where the device has fp64): float32
    block means' rounding, squared into the deviations, had put var of N(10000, 0.1) data
    0.85 % off (an outside fuzz run, 2026-11-29)."""
    v = (10000 + 0.1 * np.random.default_rng(0).standard_normal((6, 300))).astype(np.float32)
    got = _threads(getattr(clreduce, op)(da.from_array(v, chunks=(6, 7)), axis=1))
    want = getattr(np, op)(v.astype(np.float64), axis=1)
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.parametrize("op", ["var", "std"])
def test_ddof(op):
    x = _make(np.dtype("float64"), (9, 40), 11, "none", op)
    darr = da.from_array(x, chunks=(4, 13))
    k = x.shape[1]
    got = _threads(getattr(clreduce, op)(darr, axis=1, ddof=1))
    # the README's var bound with ddof 1 (test_differential._tolerance), against a long double
    # reference less the row's first element, as test_differential's own var reference
    xl = x.astype(np.longdouble)
    want = getattr(np, op)(xl - xl[:, :1], axis=1, ddof=1).astype(np.float64)
    tol = _tolerance(op, x, want, np.dtype(np.float64), 1, False, None, ddof=1)
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) - tol)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(np, op)(x, axis=1, ddof=k)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        got = _threads(getattr(clreduce, op)(darr, axis=1, ddof=k))
    np.testing.assert_array_equal(got, want)  # 0/0 -> nan, M2/0 -> inf


def test_empty_reductions_follow_numpy():
    x = np.ones((0, 4), np.float32)
    darr = da.from_array(x)
    np.testing.assert_array_equal(_threads(clreduce.sum(darr, axis=0)), np.sum(x, axis=0))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = _threads(clreduce.mean(darr, axis=0))
    assert got.dtype == np.float32 and np.all(np.isnan(got))
    for op in ("max", "argmin", "nanmin"):
        with pytest.raises(ValueError):  # at graph construction, as numpy raises at the call
            getattr(clreduce, op)(darr, axis=0)
    got = _threads(clreduce.logsumexp(darr, axis=0))  # the log of an empty sum, as api.logsumexp
    assert got.dtype == np.float32 and got.shape == (4,) and np.all(got == -np.inf)
    empty_rows = da.zeros((3, 0), np.float32, chunks=(1, 0))  # empty blocks merged: -inf, not NaN
    np.testing.assert_array_equal(_threads(clreduce.logsumexp(empty_rows, axis=1)), np.full(3, -np.inf, np.float32))
    y = np.arange(6, dtype=np.float32).reshape(3, 2)  # an empty block beside values: no effect
    mixed = da.from_array(y, chunks=((1, 1, 1), (0, 1, 1)))
    np.testing.assert_allclose(_threads(clreduce.logsumexp(mixed, axis=1)),
                               np.log(np.exp(y.astype(np.float64)).sum(1)), rtol=1e-6)
    assert _threads(clreduce.max(darr, axis=1)).shape == (0,)


def test_unknown_chunk_sizes():
    x = _make(np.dtype("float32"), (30, 6), 2, "none", "sum")
    darr = da.from_array(x, chunks=(7, 4))
    picked = darr[darr[:, 0] > 0]  # rows kept: unknown until computed
    assert any(np.isnan(c) for c in picked.chunks[0])
    ref = x[x[:, 0] > 0]
    for op in ("sum", "max", "var"):
        _check(op, ref, _threads(getattr(clreduce, op)(picked, axis=0)), 0, False, None)
    with pytest.raises(ValueError, match="known chunk sizes"):
        clreduce.argmax(picked, axis=0)
    empty = darr[darr[:, 0] > 1e9]  # nothing kept: max has no value, found only at compute
    with pytest.raises(ValueError, match="no identity"):
        _threads(clreduce.max(empty, axis=0))


def test_out_argument():
    x = _make(np.dtype("float32"), (10, 12), 4, "none", "sum")
    darr = da.from_array(x, chunks=(3, 5))
    out = da.zeros(12, dtype=np.float32)
    assert clreduce.sum(darr, axis=0, out=out) is out
    _check("sum", x, _threads(out), 0, False, None)
    with pytest.raises(TypeError, match="dask array"):
        clreduce.sum(darr, axis=0, out=np.zeros(12, np.float32))


@pytest.mark.parametrize("op,out_dtype", [("sum", "int32"), ("mean", "float16"), ("max", "float64")])
def test_out_keeps_its_dtype(op, out_dtype):
    """out= of another dtype gets the result cast into it, as numpy's reductions do (dask's
    own out= took the result's dtype: an int32 out came back float32)."""
    x = np.array([[1.7, 2.6, -7.25], [3.9, -0.5, 100.125], [0.4, 0.3, 1e-3]], np.float32)
    darr = da.from_array(x, chunks=(2, 2))
    out = da.zeros(3, dtype=out_dtype)
    assert getattr(clreduce, op)(darr, axis=0, out=out) is out
    got = _threads(out)
    want = getattr(np, op)(x, axis=0, out=np.zeros(3, out_dtype))
    assert got.dtype == np.dtype(out_dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6 if out_dtype != "float16" else 1e-3)


# ---- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["complex64", "object", "datetime64[s]", "U3"])
@pytest.mark.parametrize("op", OPS)
def test_unsupported_dtype_fails_at_graph_construction(op, dtype):
    x = np.zeros((4, 6), dtype)
    darr = da.from_array(x, chunks=2)
    with pytest.raises(TypeError) as from_dask:
        getattr(clreduce, op)(darr, axis=-1)  # the call itself: nothing is computed
    # the very message numpy input gets (api.norm on numpy input converts instead: see the sum's)
    with pytest.raises(TypeError) as from_numpy:
        getattr(clreduce, "sum" if op == "norm" else op)(x, axis=-1)
    assert str(from_dask.value) == str(from_numpy.value)


def test_no_opencl_device_names_the_thread(monkeypatch):
    from clreduce.backends import opencl

    monkeypatch.setattr(opencl, "all_devices", lambda: [])
    monkeypatch.setattr(opencl, "_default_queue_and_reason",
                        functools.cache(opencl._default_queue_and_reason.__wrapped__))
    lazy = clreduce.sum(da.ones((8, 8), chunks=4), axis=0)  # building the graph needs no device
    with pytest.raises(opencl.NoOpenCLDevice, match=r"pid \d+ thread .*pip install"):
        _threads(lazy)


def test_import_clreduce_does_not_import_dask():
    code = ("import sys, numpy as np, clreduce; from clreduce import api; "
            "assert not api._is_dask(np.ones(3)); assert 'dask' not in sys.modules, 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- a LocalCluster of 2 worker processes on PoCL -------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    if not any(d.id == "pocl" for d in DEVICES):
        pytest.skip("PoCL not found: pip install 'pyopencl[pocl]'")
    import logging

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  env={"CLREDUCE_DEVICE": "pocl"}, silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


def _on(client):
    return lambda lazy: client.compute(lazy).result()


def _worker_device():
    from clreduce.backends import opencl

    return opencl.default_reason(), opencl.default_queue().device.platform.name


def test_cluster_workers_chose_pocl_from_their_environment(client):
    reasons = client.run(_worker_device)
    assert len(reasons) == 2
    for why, platform in reasons.values():
        assert why == "CLREDUCE_DEVICE=pocl" and "portable" in platform.lower(), (why, platform)


def _cluster_params():
    # default: the threaded default cells again (their programs are in the disk cache by now);
    # --slow: every op x chunking, dtype/axis rotating
    params = []
    for oi, op in enumerate(OPS):
        for ci, chunking in enumerate(CHUNKINGS):
            for dtype in _DEFAULT_DTYPES:
                for ai, axis in enumerate(AXES):
                    for keepdims in (False, True):
                        default = _default_cell(oi, ci, dtype, ai, keepdims)
                        slow = (dtype == _DEFAULT_DTYPES[(oi + ci) % len(_DEFAULT_DTYPES)]
                                and ai == (oi + ci) % len(AXES) and not keepdims)
                        if default or slow:
                            params.append(pytest.param(op, chunking, dtype, axis, keepdims,
                                                       id=f"{op}-{chunking}-{dtype}-{axis}-{'keep' if keepdims else 'drop'}",
                                                       marks=() if default else (_SLOW,)))
    return params


@pytest.mark.parametrize("op, chunking, dtype, axis, keepdims", _cluster_params())
def test_cluster_matches_numpy(client, op, chunking, dtype, axis, keepdims):
    seed = seed_for(op, chunking, dtype, axis, keepdims)
    ord_ = _ord(op, seed)
    x, darr, axis = _case(op, dtype, axis, keepdims, chunking, seed)
    got = _run(op, darr, axis, keepdims, _on(client), ord_)  # the workers' own default: PoCL
    _check(op, x, got, axis, keepdims, ord_)


def test_worker_without_device_fails_naming_the_worker(client):
    from clreduce.backends.opencl import NoOpenCLDevice
    from clreduce.dask_workers import DeviceAssignment

    workers = client.scheduler_info()["workers"]
    by_name = {info["name"]: addr for addr, info in workers.items()}
    assert sorted(by_name) == [0, 1]
    try:
        client.register_plugin(DeviceAssignment({0: "pocl", 1: "no-such-opencl-device-xyz"}))
        lazy = clreduce.sum(da.ones((8, 8), chunks=4), axis=0)
        with pytest.raises(NoOpenCLDevice, match=r"dask worker 1 .*no-such-opencl-device-xyz"):
            client.compute(lazy, workers=[by_name[1]], allow_other_workers=False).result()
        good = client.compute(clreduce.sum(da.ones((8, 9), chunks=4), axis=0), workers=[by_name[0]],
                              allow_other_workers=False).result()
        np.testing.assert_array_equal(good, np.full(9, 8.0))
    finally:
        client.register_plugin(DeviceAssignment(["pocl"]))  # both workers back on PoCL
    assert {why for why, _ in client.run(_worker_device).values()} == {"CLREDUCE_DEVICE=pocl"}


def test_bool_dtype_and_refused_outs_follow_numpy_input():
    """An outside fuzz run (2026-11-30): sum/prod/nansum with dtype=bool raised an internal
    TypeError for dask input (numpy input runs them as any/all); max into an out= whose cast
    reorders values and var into an integer out= were cast for dask input where numpy input
    refuses them (README: not supported), and gave other numbers than numpy."""
    x = np.array([[0, 3], [0, 0], [5, 1]], np.int64)
    d = da.from_array(x, chunks=(2, 1))
    for op in ("sum", "prod", "nansum"):
        for axis in (None, 0, 1):
            got = _threads(getattr(clreduce, op)(d, axis=axis, dtype=bool))
            want = getattr(np, op)(x, axis=axis, dtype=bool)
            assert np.array_equal(got, want) and got.dtype == want.dtype, (op, axis, got, want)
    with pytest.raises(TypeError, match="not supported"):
        clreduce.mean(d, dtype=bool)
    small = da.from_array(np.array([-1, 5, 3], np.int8), chunks=1)
    with pytest.raises(TypeError, match="reorders"):
        clreduce.max(small, out=da.zeros((), dtype=np.uint8))
    with pytest.raises(TypeError, match="not supported"):
        clreduce.var(da.from_array(np.ones((3, 4), np.float32), chunks=2), axis=0, out=da.zeros(4, dtype=np.uint8))
    assert _threads(clreduce.max(small, out=da.zeros((), dtype=np.int32))) == 5  # an order-keeping cast runs
