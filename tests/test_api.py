"""numpy semantics of the public functions, on every OpenCL device (``cl_device``).

Values are compared with conftest's ``assert_reduction`` (tolerances in one place); it also
checks the result dtype, shape and scalar-vs-array type against numpy's.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clreduce
from clreduce.ops import SUPPORTED_DTYPES

OPS = ("sum", "mean", "max", "min")


def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _reduce(op, x, device, **kwargs):
    return getattr(clreduce, op)(x, device=device, **kwargs)


def _check(op, x, device, assert_reduction, axis=None, keepdims=False, **kwargs):
    before = np.array(x, copy=True)
    got = _reduce(op, x, device, axis=axis, keepdims=keepdims, **kwargs)
    np.testing.assert_array_equal(np.asarray(x), before, err_msg="input modified")
    assert_reduction(got, x, op, axis=axis, keepdims=keepdims, context=f"axis={axis!r} keepdims={keepdims}")
    return got


# ---- axes ------------------------------------------------------------------------------------

AXES_3D = [None, 0, 1, 2, -1, -2, -3, (0,), (2,), (0, 1), (1, 2), (0, 2), (2, 0), (-1, 0), (0, 1, 2), ()]


@pytest.mark.parametrize("op", OPS)
def test_3d_every_axis_form(cl_device, op, assert_reduction, make_data):
    x = make_data(_rng("3d", op), (5, 6, 7), "float32")
    for axis in AXES_3D:
        for keepdims in (False, True):
            _check(op, x, cl_device, assert_reduction, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("op", OPS)
def test_3d_int32_non_last_and_non_adjacent_axes(cl_device, op, assert_reduction, make_data):
    x = make_data(_rng("3d-int", op), (4, 9, 6), "int32")
    for axis in (0, 1, (0, 2), (2, 0), None):
        _check(op, x, cl_device, assert_reduction, axis=axis, keepdims=axis == (0, 2))


@pytest.mark.parametrize("op", OPS)
def test_4d_non_adjacent_tuple_axes(cl_device, op, assert_reduction, make_data):
    x = make_data(_rng("4d", op), (2, 3, 4, 5), "float32")
    for axis in ((0, 2), (1, 3), (0, 3), (0, 1, 3), (3, 1), -3, (0, 1, 2, 3), None):
        for keepdims in (False, True):
            _check(op, x, cl_device, assert_reduction, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("op", OPS)
def test_1d(cl_device, op, assert_reduction, make_data):
    x = make_data(_rng("1d", op), (1000,), "float32")
    for axis in (None, 0, -1, (0,)):
        for keepdims in (False, True):
            _check(op, x, cl_device, assert_reduction, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("value", [np.array(2.5, np.float32), np.float32(-1.5), np.array(7, np.int32),
                                   2.5, 3], ids=["0d-float32", "float32-scalar", "0d-int32", "py-float",
                                                 "py-int"])
def test_0d_input(cl_device, op, value, assert_reduction):
    for axis, keepdims in ((None, False), (None, True), ((), False)):
        got = _reduce(op, value, cl_device, axis=axis, keepdims=keepdims)
        ref = getattr(np, op)(value, axis=axis, keepdims=keepdims)
        assert np.asarray(got).dtype == np.asarray(ref).dtype
        assert np.shape(got) == np.shape(ref)
        assert type(got) is type(ref), (type(got), type(ref))
        assert got == ref


def test_list_input(cl_device):
    assert clreduce.sum([[1, 2], [3, 4]], axis=0, device=cl_device).tolist() == [4, 6]
    assert clreduce.max([1.5, -2.0], device=cl_device) == 1.5


# ---- strides -----------------------------------------------------------------------------------

def _views(base):
    return {
        "cols-step2": base[:, ::2],
        "rows-reversed": base[::-1],
        "both-reversed": base[::-1, ::-1],
        "transposed": base.T,
        "strided-offset": base[1::3, 2::4],
        "fortran": np.asfortranarray(base),
        "broadcast-stride0": np.broadcast_to(base[0], (5, base.shape[1])),
        "negative-step3": base[::-3, ::-1],
    }


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_non_contiguous_and_negative_strides(cl_device, op, dtype, assert_reduction, make_data):
    base = make_data(_rng("views", op, dtype), (40, 30), dtype)
    base_before = base.copy()
    for name, view in _views(base).items():
        for axis in (None, 0, 1, -1):
            got = _check(op, view, cl_device, assert_reduction, axis=axis)
            # a view and its contiguous copy give the same answer; exactly, except float
            # sums: a transpose is reduced from its base array in the base's order
            # (cl_host.base_order), which rounds in another order (both met numpy's bound above)
            again = _reduce(op, np.ascontiguousarray(view), cl_device, axis=axis)
            if not (dtype == "float32" and op in ("sum", "mean")):
                np.testing.assert_array_equal(got, again, err_msg=f"{name} axis={axis}")
    np.testing.assert_array_equal(base, base_before)


def test_zero_dim_bool_argmax(cl_device):
    """argmax of a 0-d bool array: canonicalising it (x != 0) gives a numpy scalar, not an array."""
    for value in (False, True):
        x = np.array(value)
        assert clreduce.argmax(x, device=cl_device) == np.argmax(x)
        assert clreduce.argmin(x, device=cl_device) == np.argmin(x)


# K: 7 (no whole vector: the tail alone), 64 (whole vectors only), 1000 (vectors and a tail)
@pytest.mark.parametrize("k", [7, 64, 1000])
def test_float16_argmax_argmin_infinities_nans_and_ties(cl_device, k):
    """float16 argmax / argmin along rows as numpy: +-inf are values (argmin of a row with +inf
    and numbers is a number's index), the first NaN wins, ties keep the first index, -0 ties
    +0. On PoCL the CPU walk widens the halves by F16C and tells a NaN by its bits
    (reduce_state.cl CPU_ARG_HALF_BITS): a NaN test that took inf for NaN fails here."""
    rng = _rng("f16 arg", k)
    x = (rng.standard_normal((10, k)) * 100).astype(np.float16)
    j, later = (k * 2) // 3, k - 1
    x[0, j] = np.inf                              # argmax: the inf; argmin: a number
    x[1, j] = -np.inf                             # argmin: the -inf; argmax: a number
    x[2, j], x[2, later] = np.nan, np.nan          # the first NaN, both ways
    x[3, :] = 65504.0                             # all tied: index 0
    x[3, j] = -65504.0
    x[4, :j] = np.inf                             # +inf tied up to j, then a NaN
    x[4, later] = np.nan
    x[5, :] = -0.0                                # -0 and +0 tie
    x[5, j] = 0.0
    x[6, 1:] = -np.inf                            # a number first, then -inf
    x[7, :] = np.inf                              # all +inf: index 0 both ways
    x[8, j:] = 60000.0                            # a tie of the max from j on
    x[9, 0] = np.nan                              # a NaN first
    for op in ("argmax", "argmin"):
        want = getattr(np, op)(x, axis=-1)
        got = getattr(clreduce, op)(x, axis=-1, device=cl_device)
        np.testing.assert_array_equal(got, want, err_msg=f"{op} float16 K={k}")
        assert getattr(clreduce, op)(x, device=cl_device) == getattr(np, op)(x), f"{op} float16 K={k} flat"


def test_input_unchanged_and_not_written(cl_device, make_data):
    for dtype in ("float16", "float32", "int8", "bool"):
        x = make_data(_rng("unchanged", dtype), (16, 33), dtype)
        x.flags.writeable = False  # any in-place write would raise
        snapshot = x.copy()
        for op in OPS:
            _reduce(op, x, cl_device, axis=1)
            _reduce(op, x[:, ::-2], cl_device, axis=0)
        np.testing.assert_array_equal(x, snapshot)


# ---- dtypes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_every_dtype_matches_numpy(cl_device, dtype, op, assert_reduction, make_data):
    """Result dtype (numpy's: int sums widen to int64/uint64, int mean is float64, bool max is
    bool, ...) and values, per axis and for axis=None (a numpy scalar of numpy's type)."""
    x = make_data(_rng("dtype", dtype, op), (3, 127), dtype)
    got = _check(op, x, cl_device, assert_reduction, axis=1)
    assert isinstance(got, np.ndarray) and got.dtype == getattr(np, op)(x, axis=1).dtype
    scalar = _check(op, x[1], cl_device, assert_reduction, axis=None)  # same kernel: one row of 127
    ref = getattr(np, op)(x[1])
    assert isinstance(scalar, np.generic) and not isinstance(scalar, np.ndarray)
    assert type(scalar) is type(ref), (type(scalar), type(ref))


def test_returns_scalar_only_when_everything_is_reduced(cl_device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert isinstance(clreduce.sum(x, device=cl_device), np.float32)
    assert isinstance(clreduce.sum(x, axis=(0, 1), device=cl_device), np.float32)
    kept = clreduce.sum(x, axis=None, keepdims=True, device=cl_device)
    assert isinstance(kept, np.ndarray) and kept.shape == (1, 1)
    one_row = clreduce.sum(x[:1], axis=1, device=cl_device)
    assert isinstance(one_row, np.ndarray) and one_row.shape == (1,)


# ---- float16: accumulate in float32, output float16 ---------------------------------------

def test_float16_sum_overflows_like_numpy_mean_does_not(cl_device, assert_reduction):
    ones = np.ones(10**5, dtype=np.float16)
    got = clreduce.sum(ones, device=cl_device)
    with np.errstate(over="ignore"):
        numpy_sum = np.sum(ones)
    assert isinstance(got, np.float16) and got.dtype == numpy_sum.dtype
    # exact sum 1e5 > 65504 (largest float16): the float16 result is inf, as numpy's
    assert np.isinf(got) and got > 0 and np.isinf(numpy_sum)
    mean = clreduce.mean(ones, device=cl_device)
    assert mean.dtype == np.float16 and mean == 1.0  # fp32 accumulation: the mean is exact

    rows = np.full((3, 10**5), 1000, dtype=np.float16)
    rows[1, :40000] = 1  # row 1 sums to 6.004e7: still inf; row 2 stays finite below
    rows[2] = 0.5  # 5e4 < 65504: finite
    for op in ("sum", "mean"):
        got = getattr(clreduce, op)(rows, axis=1, device=cl_device)
        assert_reduction(got, rows, op, axis=1)
    s = clreduce.sum(rows, axis=1, device=cl_device)
    ref64 = rows.astype(np.float64).sum(axis=1)
    assert s.dtype == np.float16
    np.testing.assert_array_equal(np.isinf(s), ref64 >= 65520)  # 65520 rounds to inf in float16
    m = clreduce.mean(rows, axis=1, device=cl_device)
    np.testing.assert_array_equal(m, (ref64 / rows.shape[1]).astype(np.float16))
    assert np.isfinite(m).all()


def test_float16_sum_just_below_the_limit_is_finite(cl_device):
    x = np.ones((2, 60000), dtype=np.float16)  # 60000 is a float16 value (a multiple of 32)
    got = clreduce.sum(x, axis=1, device=cl_device)
    np.testing.assert_array_equal(got, np.array([60000, 60000], dtype=np.float16))


# ---- placement arguments -----------------------------------------------------------------------

def test_queue_argument(cl_device):
    import pyopencl as cl

    # Keep the Context referenced: the Intel CPU runtime invalidates a queue's context once
    # the Python Context object is collected (a runtime quirk, see backends/opencl.py).
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    x = np.arange(100, dtype=np.float32).reshape(4, 25)
    np.testing.assert_array_equal(clreduce.max(x, axis=1, queue=queue), x.max(axis=1))


def test_device_selector_string(cl_device):
    name = cl_device.platform.name
    x = np.arange(10, dtype=np.int32)
    assert clreduce.sum(x, device=name) == 45


def test_force_as_dict_and_as_force(cl_device, cl_caps):
    x = np.arange(300, dtype=np.float32).reshape(3, 100)
    for force in ({"sg_mode": "local", "strategy": "wg_per_row"},
                  clreduce.Force(sg_mode="local", strategy="rows_per_sg", vec=2)):
        np.testing.assert_array_equal(clreduce.sum(x, axis=1, device=cl_device, force=force), x.sum(axis=1))


# ---- pyopencl arrays (read in place on their own queue) -----------------------------------

@pytest.mark.parametrize("op", OPS)
def test_pyopencl_array_in_pyopencl_array_out(cl_device, op, assert_reduction, make_data):
    import pyopencl as cl
    import pyopencl.array as cla

    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    x = make_data(_rng("cla", op), (6, 40, 5), "float32")
    arr = cla.to_device(queue, x)
    for axis in (2, 1, (0, 2), None):
        got = getattr(clreduce, op)(arr, axis=axis)
        assert isinstance(got, cla.Array)  # like pyopencl's own reductions: 0-d for axis=None
        host = got.get()
        assert_reduction(host[()] if axis is None else host, x, op, axis=axis)
    view = arr[:, ::3, :]  # non-contiguous: gathered on the device
    got = getattr(clreduce, op)(view, axis=1)
    assert_reduction(got.get(), x[:, ::3, :], op, axis=1)
    np.testing.assert_array_equal(arr.get(), x)


# ---- byte order --------------------------------------------------------------------------------

def test_big_endian_input(cl_device):
    # non-native byte order is swapped on the host before upload (kernels read native order)
    x = np.arange(10, dtype=">f4")
    got = clreduce.sum(x, device=cl_device)
    assert got == 45.0 and got.dtype == np.sum(x).dtype


# ---- property test: random shapes and axes ---------------------------------------------------

@st.composite
def _case(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    axes = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.sets(st.integers(0, ndim - 1), min_size=1).map(tuple)))
    return shape, axes, draw(st.booleans()), draw(st.sampled_from(OPS)), draw(st.sampled_from(["float32", "int32"]))


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_case())
def test_random_shapes_and_axes(cl_device, case, assert_reduction, make_data):
    shape, axes, keepdims, op, dtype = case
    x = make_data(_rng("hyp", shape), shape, dtype)
    _check(op, x, cl_device, assert_reduction, axis=axes, keepdims=keepdims)
