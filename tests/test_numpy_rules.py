"""numpy's dtype and ``out=`` rules, generated from numpy itself (issue 8 items 2 and 5).

The table is every public reduction numpy also has x every input dtype x every ``dtype=``
(where the function takes one) x every ``out=`` dtype. For each cell numpy is called on the
same data and clreduce must give the same exception type, or the same dtype and value
(integers and bools exactly; floats within ``RULES_RTOL`` below). Data are chosen so that the
rules change the value: integers at their extremes (narrow loops wrap), floats with fractions
and signs (integer loops truncate), float16 near 65504 (a float32 out= must not overflow),
non-canonical bool bytes.

Sampled in the default run (``SAMPLE_PER_GROUP`` cells per op and input dtype, always the
no-``dtype``/no-``out`` cell), the whole table with ``--slow`` / ``CLREDUCE_SLOW=1``.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import clreduce
from clreduce.ops import SUPPORTED_DTYPES
from clreduce.api import _keeps_order as keeps_order
from clreduce.plan import UnsupportedOnDevice

from conftest import TOLERANCE, slow_enabled
from test_differential import pending_kernel_fix

DTYPES = [np.dtype(d) for d in SUPPORTED_DTYPES]
TAKES_DTYPE = ("sum", "mean", "prod", "nansum", "nanmean", "var", "std")
OTHERS = ("max", "min", "any", "all", "nanmax", "nanmin", "argmax", "argmin")
NAN_OPS = ("nansum", "nanmean", "nanmax", "nanmin", "max", "min", "argmax", "argmin")
SAMPLE_PER_GROUP = 4
# Value agreement for float results: the rules decide the dtype in which values are summed;
# what this table checks is that decision (a wrong rule is off by far more: a wrapped
# integer, an overflowed float16, a truncated mean). 16 * K * eps of the narrowest float
# type involved covers any summation order of these 7-element rows; accuracy proper is
# tests/test_differential.py's job.
ROW = 7
RULES_RTOL = 16 * ROW

# Cells where numpy's answer is not numpy's rule but the platform's (numpy itself warns
# "invalid value encountered in cast": a NaN or an out-of-range float cast to an integer)
# are skipped; the README says so.

# Cells clreduce refuses on purpose with a TypeError saying "not supported" (README, dtype
# rules): var/std with an integer or bool dtype= (numpy truncates the mean and squares in
# that type) and nansum of floats in a bool loop (numpy drops NaN, then ORs). See check_cell.


def _data(dtype: np.dtype, op: str) -> np.ndarray:
    """(3, ROW) values that make the rules matter for ``dtype``.

    A NaN only for the ops whose NaN rule is the point (a NaN cast to an integer loop is
    the platform's answer in numpy, not a rule)."""
    if dtype.kind == "b":
        raw = bytes([0, 1, 2, 255, 0, 7, 128] + [0] * 7 + [3, 3, 3, 3, 3, 3, 3])
        return np.frombuffer(raw, dtype=np.bool_).reshape(3, ROW)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        rows = [[info.max, info.max, 1, 0, info.max // 3, 5, 2],
                [info.min, 1, info.min, 3, 2, info.min // 2 + 7, 0],
                [1, 2, 3, 4, 5, 6, 7]]
        return np.array(rows, dtype=dtype)
    big = 60000.0 if dtype == np.float16 else 3.0e4
    rows = [[big, big, -1.25, 0.5, 3.75, 100.5, -7.0],
            [-300.7, 200.2, 1000.5, 3.5, -0.25, 12.0, np.nan if op in NAN_OPS else 9.0],
            [1.5, 2.5, -3.5, 4.25, 5.0, 6.0, 7.75]]
    return np.array(rows, dtype=dtype)


def _cells():
    """(op, input dtype, dtype=, out dtype) for the whole table; None = not given."""
    for op in TAKES_DTYPE + OTHERS:
        for dt in DTYPES:
            group = []
            for req in ([None] + DTYPES if op in TAKES_DTYPE else [None]):
                for out in [None] + DTYPES:
                    group.append((op, dt, req, out))
            yield group


def _sampled(group: list, slow: bool) -> list:
    if slow:
        return group
    rng = random.Random(f"{group[0][0]}-{group[0][1]}")
    return [group[0]] + rng.sample(group[1:], SAMPLE_PER_GROUP)


def _call(lib, op, x, req, out_dtype):
    kwargs = {"axis": 1}
    if req is not None:
        kwargs["dtype"] = req
    out = None if out_dtype is None else np.zeros(x.shape[0], out_dtype)
    if out is not None:
        kwargs["out"] = out
    return getattr(lib, op), kwargs, out


def _numpy_reference(op, x, req, out_dtype):
    func, kwargs, out = _call(np, op, x, req, out_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            with np.errstate(over="ignore", divide="ignore", invalid="warn"):
                result = func(x, **kwargs)
        except RuntimeWarning as warning:
            if "invalid value encountered in cast" in str(warning):
                return "platform", None
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    return "value", func(x, **_call(np, op, x, req, out_dtype)[1])
                except Exception as exc:  # noqa: BLE001 - numpy's exception is the reference
                    return "error", exc
        except Exception as exc:  # noqa: BLE001
            return "error", exc
    return "value", result


def _narrowest_eps(*dtypes) -> float:
    eps = [TOLERANCE["eps"][d.name] for d in dtypes if d is not None and d.kind == "f"]
    return max(eps) if eps else TOLERANCE["eps"]["float64"]


def _fp64(device) -> bool:
    from clreduce.backends.opencl import caps_of

    return caps_of(device).fp64


def check_cell(device, op, dt, req, out_dtype):
    x = _data(dt, op)
    kind, ref = _numpy_reference(op, x, req, out_dtype)
    if kind == "platform":
        return
    func, kwargs, out = _call(clreduce, op, x, req, out_dtype)
    where = f"{op}({dt}, dtype={req}, out={out_dtype})"
    if kind == "error":
        base = TypeError if isinstance(ref, TypeError) else ValueError
        with pytest.raises(base):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                func(x, device=device, **kwargs)
        return
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            got = func(x, device=device, **kwargs)
    except UnsupportedOnDevice:
        return  # float64 on a device without fp64: tested in test_bad_input
    except TypeError as exc:
        loop = req if req is not None else (np.result_type(out_dtype, dt) if out_dtype is not None else dt)
        refused = ((op in ("max", "min", "nanmax", "nanmin") and out_dtype is not None
                    and not keeps_order(dt, out_dtype))
                   or (op in ("var", "std") and ((req is not None and req.kind in "biu")
                                              or (out_dtype is not None and out_dtype.kind in "biu")))
                   or (op == "nansum" and dt.kind == "f" and loop.kind == "b"))
        if refused and "not supported" in str(exc):
            return
        raise AssertionError(f"{where}: clreduce raised {exc!r}; numpy gives {ref!r}") from None
    if out is not None:
        assert got is out, where
    ref_arr, got_arr = np.asarray(ref), np.asarray(got)
    assert got_arr.dtype == ref_arr.dtype, f"{where}: dtype {got_arr.dtype}, numpy {ref_arr.dtype}"
    if ref_arr.dtype.kind in "biu":
        np.testing.assert_array_equal(got_arr, ref_arr, err_msg=where)
        return
    eps = _narrowest_eps(dt, req, out_dtype, ref_arr.dtype)
    if op in ("var", "std") and dt.kind in "biu" and req in (None, np.float64) and not _fp64(device):
        eps = TOLERANCE["eps"]["float32"]  # without fp64 integer var/std run in float32 (README, Tolerances)
    scale = np.nanmax(np.abs(x.astype(np.float64)), axis=1)
    if op in ("var", "std"):
        scale = scale * scale if op == "var" else scale
    finite = np.isfinite(ref_arr)
    if (op in ("var", "std") and eps == TOLERANCE["eps"]["float16"]) or (
            op == "nanmean" and dt == np.float16 and req is None and out_dtype is None):
        # numpy squares and sums in the float16 loop and overflows past 65504; clreduce's
        # Welford accumulates in float32 and returns the finite value; numpy's nanmean of
        # float16 sums in float16 (its mean in float32): clreduce keeps float32 (README)
        finite = finite | (np.isinf(ref_arr) & np.isfinite(got_arr))
        ref_arr = np.where(np.isinf(ref_arr), got_arr, ref_arr)
    np.testing.assert_array_equal(np.isfinite(got_arr), finite, err_msg=f"{where}: inf/NaN differ: {got_arr} vs {ref_arr}")
    np.testing.assert_array_equal(got_arr[~finite], ref_arr[~finite], err_msg=where)
    atol = RULES_RTOL * eps * np.broadcast_to(scale, finite.shape)[finite]
    diff = np.abs(got_arr[finite].astype(np.float64) - ref_arr[finite].astype(np.float64))
    assert np.all(diff <= atol + RULES_RTOL * eps * np.abs(ref_arr[finite].astype(np.float64))), (
        f"{where}: {got_arr} vs numpy {ref_arr}")


GROUPS = list(_cells())


@pytest.mark.parametrize("group", GROUPS, ids=[f"{g[0][0]}-{g[0][1]}" for g in GROUPS])
def test_dtype_and_out_rules_match_numpy(cl_device, group, request):
    pending = []
    for op, dt, req, out_dtype in _sampled(group, slow_enabled(request.config)):
        try:
            check_cell(cl_device, op, dt, req, out_dtype)
        except AssertionError:
            # the table's int64/uint64 extremes make integer means wrap until the kernel fix
            reason = pending_kernel_fix("int_extreme", op, dt)
            if reason is None:
                raise
            pending.append(reason)
    if pending:  # every other cell of the group was checked first
        pytest.xfail(pending[0])


# ---- the reproducers, always run ------------------------------------------------------

def test_float16_input_with_float32_out_sums_in_float32(cl_device):
    out = np.zeros((), np.float32)
    clreduce.sum(np.array([60000, 60000], np.float16), out=out, device=cl_device)
    assert out == np.sum(np.array([60000, 60000], np.float16), out=np.zeros((), np.float32)) == 120000


# (call, data) whose mean or variance lands in float16 over more than 65504 elements: numpy
# divides by an intp count, in float64 (a float16 divide by 70000 is a divide by inf: 0)
_F16_COUNT = (np.arange(70_000) % 2 * 0.1).astype(np.float32)
F16_COUNT_CASES = [
    ("mean", _F16_COUNT, dict(out=np.zeros((), np.float16))),       # mean's divide into out=
    ("mean", _F16_COUNT, dict(dtype=np.float16)),                    # a float16 loop, then the divide
    ("nanmean", _F16_COUNT.astype(np.float16), {}),                  # the NaN-aware count divides
    ("mean", np.ones(70_000, np.int8), dict(out=np.zeros((), np.float16))),   # integer sum -> float16 out
    ("mean", np.ones((2, 70_000), bool), dict(axis=1, dtype=np.float16)),     # counts of bools
    ("var", _F16_COUNT, dict(out=np.zeros((), np.float16))),        # squares stored in out=, then divided
    ("std", _F16_COUNT, dict(out=np.zeros((), np.float16), ddof=1.5)),        # a float ddof
    ("var", np.float32([0, 10] * 35_000), dict(out=np.zeros((), np.float16))),  # squares overflow: inf
]


@pytest.mark.parametrize("op, x, kwargs", F16_COUNT_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_float16_results_of_long_axes_divide_in_float64(cl_device, op, x, kwargs):
    fresh = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    with np.errstate(all="ignore"):
        got = np.asarray(getattr(clreduce, op)(x, device=cl_device, **kwargs))
        want = np.asarray(getattr(np, op)(x, **fresh))
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    # numpy's float16 loop rounds every partial sum to half, clreduce's float32 sum rounds once:
    # one float16 ulp apart at most (README, dtype rules), and inf where numpy overflows
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0**-10)
    assert (got != 0).all()


def test_sum_with_int8_dtype_wraps_like_numpy(cl_device):
    x = np.array([300.7, -200.2, 1000.5, 3.5, 120.9, 77.0], np.float64)
    assert clreduce.sum(x, dtype=np.int8, device=cl_device) == np.sum(x, dtype=np.int8)
    y = np.full(1000, 100, np.int32)
    assert clreduce.sum(y, dtype=np.int8, device=cl_device) == np.sum(y, dtype=np.int8)
    assert clreduce.prod(y[:9], dtype=np.int16, device=cl_device) == np.prod(y[:9], dtype=np.int16)


def test_nanmean_float_with_integer_dtype_raises_as_numpy(cl_device):
    with pytest.raises(TypeError, match="inexact"):
        clreduce.nanmean(np.array([1, 2], np.float16), dtype=np.int64, device=cl_device)
    with pytest.raises(TypeError, match="inexact"):
        clreduce.nanmean(np.array([1, 2], np.float32), out=np.zeros((), np.int64), device=cl_device)


@pytest.mark.parametrize("how", ["dtype", "out"])
def test_float16_mean_in_a_float32_loop_keeps_the_total_in_float32(cl_device, how):
    """np.mean(float16, dtype=float32) (or a float32 out=) sums and divides in float32; clreduce
    had run its default float16 mean and cast it, rounding every row's mean to float16 first
    (max error 1.3e-5 on N(0, 1) rows of 1000 against numpy's 5e-9; an outside fuzz run,
    2026-11-29)."""
    x = np.random.default_rng(3).standard_normal((64, 1000)).astype(np.float16)
    want = np.mean(x, axis=1, dtype=np.float32)
    if how == "dtype":
        got = clreduce.mean(x, axis=1, dtype=np.float32, device=cl_device)
    else:
        got = clreduce.mean(x, axis=1, out=np.zeros(64, np.float32), device=cl_device)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-8)
    pair = np.array([2.1875, 1.986328125], np.float16)  # the report's case: 2.086914 in float32
    assert clreduce.mean(pair, dtype=np.float32, device=cl_device) == np.mean(pair, dtype=np.float32)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float32"])
@pytest.mark.parametrize("axis", [0, -1, True])
def test_nanmean_of_input_without_nan_takes_means_axis_rules(dtype, axis):
    """numpy's nanmean hands integer and bool input to mean: a 0-d array's axis 0 / -1 is an
    AxisError there (float input keeps the nan functions' "no axis"); a bool axis on 1-d input
    too (an outside fuzz run found clreduce returning the value, 2026-11-29)."""
    for x in (np.array(3, dtype), np.array([1, 0, 1], dtype)):
        try:
            want = np.nanmean(x, axis=axis)
        except Exception as exc:  # noqa: BLE001 - the type is what must match
            with pytest.raises(type(exc)):
                clreduce.nanmean(x, axis=axis)
            continue
        np.testing.assert_array_equal(clreduce.nanmean(x, axis=axis), want)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("ddof", [3, 4, 3.0])
@pytest.mark.parametrize("dtype,out_dtype", [("int32", "float32"), ("int8", "float16"), ("float64", "float32"),
                                             ("float32", "float16")])
def test_no_degrees_of_freedom_into_a_narrower_out_match_numpy(cl_device, op, ddof, dtype, out_dtype):
    """K - ddof <= 0 into an out= narrower than the loop: numpy divides the sum of squares by 0,
    inf where it is positive and NaN where it is 0 (clreduce gave NaN for both: the variance
    times 0 dofs; an outside fuzz run, 2026-11-29)."""
    x = np.array([[0, 1, 5], [2, 2, 2], [7, -3, 1]], dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(np, op)(x, axis=1, ddof=ddof, out=np.zeros(3, out_dtype))
        out = np.zeros(3, out_dtype)
        got = getattr(clreduce, op)(x, axis=1, ddof=ddof, out=out, device=cl_device)
    assert got is out
    np.testing.assert_array_equal(out, want)
    assert np.isinf(want[0]) and np.isnan(want[1])  # the case the test is about


def test_out_casting_both_directions(cl_device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(TypeError):  # numpy: argmax never writes into a float out
        clreduce.argmax(x, axis=1, out=np.zeros(3, np.float64), device=cl_device)
    out = np.zeros(3, np.int32)  # numpy accepts a narrower integer out for argmax
    clreduce.argmax(x, axis=1, out=out, device=cl_device)
    np.testing.assert_array_equal(out, np.argmax(x, axis=1))
    out = np.zeros(3, np.int8)  # sum of int8 into int8: numpy accepts (loop in int8)
    y = np.full((3, 4), 100, np.int8)
    clreduce.sum(y, axis=1, out=out, device=cl_device)
    np.testing.assert_array_equal(out, np.sum(y, axis=1, out=np.zeros(3, np.int8)))
    # float sum into an integer out=: numpy 2.x casts (unsafe) where 1.x refused; follow the
    # installed numpy either way
    try:
        want = np.sum(x + 0.7, axis=1, out=np.zeros(3, np.int64))
    except TypeError:
        with pytest.raises(TypeError):
            clreduce.sum(x + 0.7, axis=1, out=np.zeros(3, np.int64), device=cl_device)
    else:
        got = clreduce.sum(x + 0.7, axis=1, out=np.zeros(3, np.int64), device=cl_device)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min", "any", "all", "count_nonzero", "nansum",
                                "nanmean", "nanmax", "nanmin", "var", "std", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_non_canonical_bools_are_true(cl_device, op, axis):
    raw = bytes([0, 2, 255, 1, 0, 5, 128, 0, 0, 9, 0, 0] * 5)
    x = np.frombuffer(raw, dtype=np.bool_).reshape(6, 10)
    before = x.view(np.uint8).copy()
    got = getattr(clreduce, op)(x, axis=axis, device=cl_device)
    want = getattr(np, op)(x, axis=axis)
    np.testing.assert_array_equal(x.view(np.uint8), before)  # the caller's bytes are untouched
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if np.asarray(want).dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)
        if np.asarray(want).dtype.kind == "b":  # a True must be the byte 1, not 255
            np.testing.assert_array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))


@pytest.mark.parametrize("ord", [None, 0, 1, 2, np.inf, -np.inf])
def test_non_canonical_bool_norm_and_logsumexp(cl_device, ord):
    x = np.frombuffer(bytes([0, 2, 255, 1, 0, 5, 128, 0] * 4), dtype=np.bool_).reshape(4, 8)
    np.testing.assert_allclose(clreduce.norm(x, ord=ord, axis=1, device=cl_device),
                               np.linalg.norm(x.astype(np.float64), ord=ord, axis=1), rtol=1e-12)
    lse = np.log(np.sum(np.exp(x.astype(np.float64)), axis=1))
    np.testing.assert_allclose(clreduce.logsumexp(x, axis=1, device=cl_device), lse, rtol=1e-12)
