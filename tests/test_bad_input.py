"""Bad input, empty reductions and missing device features: each gives the error numpy (or
the README's bad-input table) promises, with a message that names the problem and a way out."""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings

import numpy as np
import pytest

import clreduce
from clreduce.caps import DeviceCaps
from clreduce.plan import Force, Problem, UnsupportedOnDevice, plan

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

OPS = ("sum", "mean", "max", "min")


def _fn(op):
    return getattr(clreduce, op)


# ---- dtypes ------------------------------------------------------------------------------------

UNSUPPORTED = {
    "object": np.array([1, 2, 3], dtype=object),
    "complex64": np.ones(3, dtype=np.complex64),
    "complex128": np.ones((2, 3), dtype=np.complex128),
    "unicode": np.array(["a", "bc"]),
    "bytes": np.array([b"a", b"bc"]),
    "datetime64": np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"),
    "timedelta64": np.array([1, 2], dtype="timedelta64[s]"),
    "structured": np.zeros(3, dtype=[("a", "f4"), ("b", "i4")]),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_dtype_is_type_error_naming_it(name, op):
    x = UNSUPPORTED[name]
    with pytest.raises(TypeError, match=re.escape(str(x.dtype))) as info:
        _fn(op)(x)
    assert "supported" in str(info.value)


def test_unsupported_dtype_error_comes_before_axis_checks():
    # the dtype is the first thing wrong here; report it, not the axis
    with pytest.raises(TypeError, match="complex128"):
        clreduce.sum(np.ones(3, np.complex128), axis=5)


# ---- axes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [2, -3, (0, 2), (5,), (-3, 0)])
def test_axis_out_of_range_is_axis_error(axis):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(AxisError):
        np.sum(x, axis=axis)  # numpy agrees
    with pytest.raises(AxisError):
        clreduce.sum(x, axis=axis)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "count_nonzero",
                                "nansum", "nanmax", "nanmin", "nanmean", "mean", "var", "std"])
def test_axis_on_0d_as_numpy(op):
    """numpy's ufunc reductions, argmax/argmin, count_nonzero and the nan* functions take an int
    axis 0 or -1 of a 0-d array as no axis and return the value; mean/var/std, an axis tuple
    and axis 1 raise (an outside fuzz run: clreduce raised AxisError for all of them)."""
    x = np.array(3.5, np.float32)
    for axis in (0, -1, (0,), 1):
        try:
            want = getattr(np, op)(x, axis=axis)
        except Exception as exc:  # numpy's own error type
            with pytest.raises(type(exc)):
                getattr(clreduce, op)(x, axis=axis)
            continue
        got = getattr(clreduce, op)(x, axis=axis)
        assert np.asarray(got).shape == np.asarray(want).shape and got == want, (op, axis, got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype, (op, axis)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "nanmean", "argmax", "count_nonzero"])
def test_bool_axis_raises_numpys_error(op):
    """A bool axis is numpy's TypeError, except in mean/var/std of 0-d and 1-d arrays, whose
    element count takes True as axis 1 first: AxisError there (an outside fuzz run)."""
    for shape in ((), (3,), (2, 3)):
        for axis in (True, False, np.bool_(True), np.bool_(False)):
            x = np.ones(shape, np.float32)
            with pytest.raises(Exception) as want:
                getattr(np, op)(x, axis=axis)
            with pytest.raises(want.type):
                getattr(clreduce, op)(x, axis=axis)


def test_count_nonzero_of_everything_has_numpys_type():
    x = np.array([[0, 1, 2], [3, 0, 0]], np.int32)
    for axis in (None, (0, 1)):
        got, want = clreduce.count_nonzero(x, axis=axis), np.count_nonzero(x, axis=axis)
        assert got == want and type(got) is type(want), (axis, type(got), type(want))


@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, 1, 0)])
def test_duplicate_axes_are_value_error(axis):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="duplicate"):
        clreduce.mean(x, axis=axis)
    with pytest.raises(ValueError):
        np.mean(x, axis=axis)


@pytest.mark.parametrize("axis", [1.0, "0", [0, 1]])
def test_axis_of_wrong_type_is_type_error(axis):
    with pytest.raises(TypeError):
        clreduce.sum(np.ones((2, 3), np.float32), axis=axis)


# ---- empty reductions (decided on the host: no device needed) ---------------------------------

EMPTY_CASES = [((0,), None), ((3, 0), 1), ((3, 0), None), ((0, 0), 1), ((2, 0, 4), (1, 2))]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape, axis", EMPTY_CASES)
def test_mean_of_empty_is_nan_with_runtime_warning(shape, axis, dtype):
    x = np.zeros(shape, dtype)
    with pytest.warns(RuntimeWarning, match="[Mm]ean of empty slice"):
        got = clreduce.mean(x, axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = np.mean(x, axis=axis)
    assert np.asarray(got).dtype == np.asarray(ref).dtype and np.shape(got) == np.shape(ref)
    assert type(got) is type(ref)
    assert np.isnan(got).all()


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape, axis", EMPTY_CASES)
def test_max_min_of_empty_is_value_error(shape, axis, op):
    x = np.zeros(shape, np.float32)
    with pytest.raises(ValueError, match="zero-size array"):
        getattr(np, op)(x, axis=axis)
    with pytest.raises(ValueError, match="zero-size array"):
        _fn(op)(x, axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "bool"])
@pytest.mark.parametrize("shape, axis", EMPTY_CASES)
def test_logsumexp_of_empty_is_minus_inf(shape, axis, dtype):
    """The log of an empty sum: scipy.special.logsumexp (SciPy >= 1.14, scipy/scipy#20399)
    and torch.logsumexp give -inf; numpy's own formula too. Float dtypes kept, others float64."""
    x = np.zeros(shape, dtype)
    for keepdims in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # scipy and torch do not warn; neither does clreduce
            got = clreduce.logsumexp(x, axis=axis, keepdims=keepdims)
        with np.errstate(divide="ignore"):
            ref = np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=keepdims))
        want_dtype = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
        assert np.asarray(got).dtype == want_dtype and np.shape(got) == np.shape(ref)
        assert np.all(np.asarray(got) == -np.inf) and np.all(ref == -np.inf)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("ddof", [0, 1, -1, -0.5])
@pytest.mark.parametrize("shape, axis", EMPTY_CASES)
def test_var_of_empty_follows_numpy_for_every_ddof(shape, axis, ddof, op):
    """NaN where 0 - ddof <= 0; 0 where a negative ddof leaves a positive count (numpy divides
    no squares by it: until 2026-11-27 clreduce said NaN). Both warn, as numpy does."""
    x = np.zeros(shape, np.float32)
    with pytest.warns(RuntimeWarning):
        got = getattr(clreduce, op)(x, axis=axis, ddof=ddof)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref = getattr(np, op)(x, axis=axis, ddof=ddof)
    assert np.asarray(got).dtype == np.asarray(ref).dtype and np.shape(got) == np.shape(ref)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint16", "int64", "bool"])
@pytest.mark.parametrize("shape, axis", EMPTY_CASES)
def test_sum_of_empty_is_zero_of_numpys_dtype(shape, axis, dtype):
    x = np.zeros(shape, dtype)
    for keepdims in (False, True):
        got = clreduce.sum(x, axis=axis, keepdims=keepdims)
        ref = np.sum(x, axis=axis, keepdims=keepdims)
        assert np.asarray(got).dtype == np.asarray(ref).dtype and np.shape(got) == np.shape(ref)
        assert type(got) is type(ref)
        assert (np.asarray(got) == 0).all()


@pytest.mark.parametrize("op", OPS)
def test_no_output_rows_gives_empty_result(op):
    # reduce a non-empty axis of an array with an empty kept axis: numpy returns an empty array
    x = np.zeros((0, 5), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy does not warn here; neither should clreduce
        got = _fn(op)(x, axis=1)
    assert isinstance(got, np.ndarray) and got.shape == (0,) and got.dtype == getattr(np, op)(x, axis=1).dtype


# ---- fp64 ----------------------------------------------------------------------------------------

NO_FP64 = DeviceCaps(name="Mali-G52 (no fp64)", vendor="arm", fp64=False, fp16=True)


@pytest.mark.parametrize("op", OPS)
def test_float64_without_fp64_names_device_and_way_out_planner(op):
    with pytest.raises(UnsupportedOnDevice) as info:
        plan(NO_FP64, Problem(rows=4, row_len=100, dtype="float64", op=op))
    message = str(info.value)
    assert "Mali-G52 (no fp64)" in message
    assert "float32" in message and ("astype" in message or "cl_khr_fp64" in message)
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "uint8", "bool"])
def test_no_fp64_needed_for_other_dtypes(dtype):
    # integer mean: exact 64-bit integer sum on the device, float64 divide on the host
    for op in OPS:
        plan(NO_FP64, Problem(rows=4, row_len=100, dtype=dtype, op=op))


def test_float64_without_fp64_through_the_backend(cl_device, monkeypatch):
    from clreduce.backends import opencl
    from clreduce.backends.opencl_probe import probe_device

    real = probe_device(cl_device)
    fake = dataclasses.replace(real, fp64=False, extensions=tuple(e for e in real.extensions if e != "cl_khr_fp64"))
    monkeypatch.setattr(opencl, "probe_device", lambda device, **kw: fake)
    if hasattr(opencl, "_plan_cache"):  # plans memoised with the real caps must not answer
        monkeypatch.setattr(opencl, "_plan_cache", {})
    with pytest.raises(UnsupportedOnDevice) as info:
        clreduce.sum(np.ones((4, 10)), axis=1, device=cl_device)
    assert real.name in str(info.value) and "float32" in str(info.value)
    # and float32 still runs there
    assert clreduce.sum(np.ones((4, 10), np.float32), axis=1, device=cl_device).tolist() == [10.0] * 4
    assert clreduce.mean(np.arange(10), device=cl_device) == 4.5


@pytest.mark.parametrize("op, dtype, out_dtype", [("mean", "int8", "float32"), ("sum", "int32", "float32"),
                                                   ("nansum", "uint16", "float16"), ("mean", "bool", "float32"),
                                                   ("mean", "uint32", "int32")])
def test_integer_out_loops_on_a_device_without_fp64(cl_device, monkeypatch, op, dtype, out_dtype):
    """An out= that makes numpy's loop float64 for up-to-32-bit integers: a device without fp64
    runs the exact 64-bit sums and makes them float64 on the host (it had raised
    UnsupportedOnDevice where the same call without out= runs; an outside fuzz run,
    2026-11-30). Products stay refused (a float64 product is not the 64-bit one)."""
    from clreduce.backends import opencl
    from clreduce.backends.opencl_probe import probe_device

    real = probe_device(cl_device)
    fake = dataclasses.replace(real, fp64=False, extensions=tuple(e for e in real.extensions if e != "cl_khr_fp64"))
    monkeypatch.setattr(opencl, "probe_device", lambda device, **kw: fake)
    if hasattr(opencl, "_plan_cache"):
        monkeypatch.setattr(opencl, "_plan_cache", {})
    x = (np.arange(3 * 70).reshape(3, 70) * 7919 % 251).astype(dtype)
    for _ in range(2):
        out = np.zeros(3, out_dtype)
        got = getattr(clreduce, op)(x, axis=1, out=out, device=cl_device)
        want = getattr(np, op)(x, axis=1, out=np.zeros(3, out_dtype))
        assert got is out and np.array_equal(got, want), (got, want)
    with pytest.raises(UnsupportedOnDevice):
        clreduce.prod(x.astype(np.int32), axis=1, out=np.zeros(3, np.float32), device=cl_device)
    # integer norms work in float64 (numpy.linalg.norm's): refused, and the advice fits norm,
    # which has no dtype= (the planner's message had offered one)
    with pytest.raises(UnsupportedOnDevice, match="norm of int8") as info:
        clreduce.norm(x.astype(np.int8), axis=1, device=cl_device)
    assert "dtype=" not in str(info.value)


# ---- forcing what the device cannot do --------------------------------------------------------

def test_forcing_subgroup_modes_without_subgroups(cl_device, cl_caps):
    x = np.ones((4, 64), np.float32)
    if cl_caps.subgroups:
        pytest.skip(f"{cl_caps.name} has sub-groups (PoCL has none)")
    modes = ["builtin", "shuffle_khr", "shuffle_qcom"]
    if cl_caps.ptx_shuffle and cl_caps.subgroup_sizes:
        # NVIDIA's OpenCL: no sub-group extension, but warp shuffles in inline PTX, which a
        # forced "shuffle" (any butterfly the device runs) takes
        assert clreduce.sum(x, axis=1, device=cl_device, force=Force(sg_mode="shuffle")).tolist() == [64.0] * 4
    else:
        modes.append("shuffle")
    for mode in modes:
        with pytest.raises(UnsupportedOnDevice, match=mode):
            clreduce.sum(x, axis=1, device=cl_device, force=Force(sg_mode=mode))
    with pytest.raises(UnsupportedOnDevice):
        clreduce.sum(x, axis=1, device=cl_device, force={"sg_mode": "builtin"})


def test_forcing_a_width_the_device_does_not_run(cl_device, cl_caps):
    x = np.ones((4, 64), np.float32)
    if not cl_caps.subgroups:
        pytest.skip("no sub-groups: widths cannot be forced at all")
    bad = next(w for w in (2, 128, 256, 512) if w not in cl_caps.subgroup_sizes)
    with pytest.raises(UnsupportedOnDevice, match=str(bad)):
        clreduce.sum(x, axis=1, device=cl_device, force=Force(sg_mode="shuffle", sg_size=bad))


@pytest.mark.parametrize("force, error", [
    ({"strategy": "fastest"}, ValueError),
    ({"sg_mode": "warp"}, ValueError),
    ({"wg_size": 100}, ValueError),
    ({"wg_size": 1 << 20}, ValueError),
    ({"vec": 3}, ValueError),
    ({"vec": 32}, ValueError),
    ({"sg_size": 0}, ValueError),   # was silently "planner's choice" (issue 8 item 6)
    ({"sg_size": 3}, ValueError),
    ({"wg_size": 0}, ValueError),
    ({"wg_size": -64}, ValueError),
    ({"sg_size": "8"}, TypeError),
    ({"vec": True}, TypeError),
    ({"bogus": 1}, TypeError),
    ("builtin", TypeError),
])
def test_bad_force_values(cl_device, force, error):
    with pytest.raises(error):
        clreduce.sum(np.ones((4, 64), np.float32), axis=1, device=cl_device, force=force)


def test_bad_placement_arguments(cl_device):
    from clreduce.backends.opencl import NoOpenCLDevice

    x = np.ones(8, np.float32)
    with pytest.raises(TypeError):
        clreduce.sum(x, device=3)
    with pytest.raises(TypeError, match="devcie"):
        clreduce.sum(x, devcie=cl_device)
    with pytest.raises(NoOpenCLDevice):
        clreduce.sum(x, device="no-such-opencl-device-xyz")


# ---- no OpenCL at all -------------------------------------------------------------------------

def test_no_opencl_platform_gives_install_hint(monkeypatch):
    pytest.importorskip("pyopencl")
    from clreduce.backends import opencl

    monkeypatch.setattr(opencl, "all_devices", lambda: [])
    with pytest.raises(opencl.NoOpenCLDevice, match=r"pip install .*pocl") as info:
        opencl.choose_default_device()
    assert isinstance(info.value, RuntimeError)
    assert opencl.BACKEND.unavailable_reason() == opencl.INSTALL_HINT
    # through the public API, with the default-device cache emptied for this test only
    monkeypatch.setattr(opencl, "_default_queue_and_reason",
                        functools.cache(opencl._default_queue_and_reason.__wrapped__))
    with pytest.raises(opencl.NoOpenCLDevice, match="pip install"):
        clreduce.sum(np.ones(4, np.float32))


# ---- backends and array kinds --------------------------------------------------------------------

def test_unknown_backend_lists_registered_names():
    from clreduce.backends import REGISTRY

    with pytest.raises(ValueError) as info:
        clreduce.sum(np.ones(3, np.float32), backend="vulkan")
    assert "vulkan" in str(info.value)
    for name in REGISTRY:
        assert name in str(info.value)


class FakeCupyArray:
    """Quacks like a cupy array: CUDA memory the OpenCL backend cannot read."""

    __module__ = "fakecupy"
    shape = (3,)
    dtype = np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_cuda_array_with_opencl_backend_is_type_error():
    with pytest.raises(TypeError, match="another device|CUDA"):
        clreduce.sum(FakeCupyArray(), backend="opencl")


def test_cuda_array_default_backend_is_not_read_by_opencl():
    """With no CUDA backend registered: TypeError. With one registered, the array goes there,
    and without cupy that backend says so (never a silent host copy through OpenCL)."""
    from clreduce.backends import REGISTRY

    if "cuda" not in REGISTRY:
        with pytest.raises(TypeError, match="CUDA"):
            clreduce.sum(FakeCupyArray())
        return
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises((TypeError, RuntimeError), match="(?i)cuda|cupy"):
            clreduce.sum(FakeCupyArray())
    else:
        pytest.skip("cupy installed: a fake CUDA array would reach real CUDA code")


# ---- Problem ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(rows=0, row_len=4), dict(rows=4, row_len=0), dict(rows=-1, row_len=4)])
def test_problem_rejects_empty(kwargs):
    with pytest.raises(ValueError):
        Problem(dtype="float32", op="sum", **kwargs)


def test_problem_rejects_unknown_op():
    with pytest.raises(ValueError, match="median"):
        Problem(rows=1, row_len=1, dtype="float32", op="median")


# ---- argument checking as numpy (issue 8 item 6) ----------------------------------------------

def _numpy_error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the reference's own exception type
        return exc
    raise AssertionError("numpy accepted the call")


@pytest.mark.parametrize("kwargs", [
    {"axis": True}, {"axis": (True,)}, {"axis": np.True_}, {"axis": 1.0}, {"axis": "0"},
    {"keepdims": None}, {"keepdims": "yes"}, {"keepdims": np.True_},
])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "var", "nanmean"])
def test_bad_axis_and_keepdims_raise_numpys_type(cl_device, op, kwargs):
    x = np.ones((2, 3), np.float32)
    assert isinstance(_numpy_error(lambda: getattr(np, op)(x, **kwargs)), TypeError)
    with pytest.raises(TypeError):
        getattr(clreduce, op)(x, device=cl_device, **kwargs)


def test_argmax_keepdims_is_truthiness_as_numpy(cl_device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert clreduce.argmax(x, axis=1, keepdims=None, device=cl_device).shape == np.argmax(x, axis=1, keepdims=None).shape
    with pytest.raises(TypeError):
        clreduce.argmax(x, axis=True, device=cl_device)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "argmax", "nanmean", "count_nonzero", "logsumexp", "norm"])
def test_unknown_keyword_names_the_public_function(cl_device, op):
    with pytest.raises(TypeError, match=rf"clreduce\.{op}\(\) got an unexpected keyword argument 'bogus'"):
        getattr(clreduce, op)(np.ones(4, np.float32), device=cl_device, bogus=1)


def test_queue_of_the_wrong_type_is_type_error():
    with pytest.raises(TypeError, match="CommandQueue"):
        clreduce.sum(np.ones(4, np.float32), queue="q")


@pytest.mark.parametrize("op", ["var", "std"])
def test_correction_is_ddof(cl_device, op):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 50)).astype(np.float32)
    got = getattr(clreduce, op)(x, axis=1, correction=1, device=cl_device)
    want = getattr(np, op)(x, axis=1, correction=1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got, getattr(clreduce, op)(x, axis=1, ddof=1, device=cl_device), rtol=0)
    # both given: numpy's ValueError and message
    with pytest.raises(ValueError, match="ddof and correction can't be provided simultaneously"):
        getattr(clreduce, op)(x, axis=1, ddof=1, correction=1, device=cl_device)
    with pytest.raises(TypeError):
        getattr(clreduce, op)(x, ddof=None, device=cl_device)


@pytest.mark.parametrize("ddof", [2**70, -2**70, 2**63])
def test_python_int_ddof_past_a_c_long_overflows_as_numpy(ddof):
    """numpy converts a Python int ddof to a C long (OverflowError); clreduce returned inf
    (an outside fuzz run, 2026-11-29). numpy integers and floats of any size pass."""
    x = np.ones(3)
    with pytest.raises(OverflowError):
        np.var(x, ddof=ddof)
    for op in ("var", "std"):
        with pytest.raises(OverflowError):
            getattr(clreduce, op)(x, ddof=ddof)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        huge = np.uint64(2**64 - 1)
        assert np.isnan(clreduce.var(x, ddof=huge)) and np.isnan(np.var(x, ddof=huge))


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_nan_and_bool_ddof_as_numpy(cl_device, op, dtype):
    """A NaN ddof makes numpy's degrees of freedom NaN, so every result is NaN (the kernels
    clamp the divisor at 0 and gave inf); ddof=True is numpy's 1 (clreduce had raised
    TypeError). Both outside fuzz findings, 2026-11-30. Repeated: the fast path must not
    learn the NaN case."""
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            got = getattr(clreduce, op)(x, axis=1, ddof=float("nan"), device=cl_device)
            want = getattr(np, op)(x, axis=1, ddof=float("nan"))
            assert np.isnan(want).all() and np.isnan(got).all() and got.dtype == want.dtype, got
            got = getattr(clreduce, op)(x, axis=1, ddof=True, device=cl_device)
            np.testing.assert_allclose(got, getattr(np, op)(x, axis=1, ddof=True), rtol=1e-6)


@pytest.mark.parametrize("fn", ["sum", "argmax", "softmax", "cumsum"])
def test_masked_arrays_and_matrices_are_refused(fn):
    """clreduce reads the data buffer: a masked array's sum came out over the masked elements
    too and np.matrix lost its 2-D results (an outside fuzz run, 2026-11-30). Both are
    refused with TypeError before any device is touched; np.memmap, plain data, is not."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(TypeError, match="masks"):
        getattr(clreduce, fn)(np.ma.masked_array(x, mask=x > 6))
    with pytest.raises(TypeError, match="np.matrix"):
        getattr(clreduce, fn)(np.asmatrix(x))
