"""numpy semantics: axis, keepdims, dtype, out, empty and NaN rules; then a backend runs it.

Every request becomes ``(outer, K, inner)`` here or in the backend's ``layout``: reduce the
middle axis; adjacent reduced axes of a C-contiguous array merge with no copy, anything
else (non-adjacent axes, non-contiguous views) is copied once into C order with the reduced
axes last (documented in the README).
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings

import numpy as np

from . import config, fastpath
from .backends import backend_for
from .fastpath_rows import to_numpy
from .ops import OPS, check_dtype, dtype_rule
from .plan import Force, Problem, UnsupportedOnDevice

try:  # numpy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover
    from numpy import AxisError


class OutDtypeError(ValueError, TypeError):
    """``out=`` cannot hold the result's dtype under numpy's same_kind casting.

    A ValueError (as our docs promise for bad ``out=``) and a TypeError (what numpy raises).
    """


# numpy's ufunc reductions (and argmax/argmin, count_nonzero, the nan* functions) take an int
# axis of 0 or -1 on a 0-d array as no axis at all and return the value; mean, var and std
# raise AxisError, as for any other axis.
ZERO_D_AXIS_FUNCTIONS = frozenset(("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "count_nonzero",
                                   "nansum", "nanmax", "nanmin", "nanmean"))


# numpy's mean, var and std count the reduced elements with the axis as an index first: a
# Python bool is then axis 1 or 0, out of range of a 0-d array (both) or a 1-d one (True):
# AxisError; in range, the sum's TypeError, as every other function gives (numpy.bool_ always)
BOOL_AXIS_AS_INDEX_FUNCTIONS = frozenset(("mean", "var", "std"))


def axis_rules_name(public: str, in_dtype: np.dtype) -> str:
    """The function whose axis rules a call of ``public`` follows: numpy's nanmean hands input
    that cannot hold NaN (integers, bool) to mean, axis rules and all."""
    return "mean" if public == "nanmean" and in_dtype.kind != "f" else public


def normalize_axis(axis, ndim: int, *, single: bool = False, zero_d_int: bool = False,
                   bool_as_index: bool = False) -> tuple[int, ...]:
    """Sorted non-negative axes; AxisError / ValueError / TypeError as numpy raises them.
    ``zero_d_int``: a 0-d array's int axis 0 or -1 means no axis (ZERO_D_AXIS_FUNCTIONS);
    ``bool_as_index``: BOOL_AXIS_AS_INDEX_FUNCTIONS' errors for a bool axis."""
    if axis is None:
        return tuple(range(ndim))
    if bool_as_index and ndim <= 1 and isinstance(axis, bool) and int(axis) >= ndim:  # np.bool_: TypeError
        raise AxisError(int(axis), ndim)
    if single and isinstance(axis, tuple):
        raise TypeError("'tuple' object cannot be interpreted as an integer (this function takes one axis)")
    if (zero_d_int and ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
            and int(axis) in (0, -1)):
        return ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
        if isinstance(ax, (bool, np.bool_)):
            raise TypeError("an integer is required for the axis (not a bool)")  # numpy's TypeError
        try:
            ax = operator.index(ax)
        except TypeError:
            raise TypeError(f"axis must be an int, a tuple of ints or None, not {type(ax).__name__}") from None
        if not -ndim <= ax < ndim:
            raise AxisError(ax, ndim)
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _to_force(force) -> Force | None:
    if force is None or isinstance(force, Force):
        return force
    if isinstance(force, dict):
        return Force(**force)
    raise TypeError(f"force must be a clreduce.Force or a dict, not {type(force).__name__}")


def _as_flag(value, name: str) -> bool:
    """numpy's keepdims check: an int-like (True, False, 1, 0); None and strings are TypeErrors."""
    if isinstance(value, bool):
        return value
    try:
        return bool(operator.index(value))
    except TypeError:
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer ({name}=)") from None


# Keywords each backend takes beside the public arguments (``**where``).
_BACKEND_OPTIONS = {"opencl": ("device", "queue"), "cuda": ("device", "stream")}


def _check_options(chosen, public: str, where: dict) -> None:
    known = _BACKEND_OPTIONS.get(chosen.name)
    if known is not None:
        unknown = sorted(set(where) - set(known))
        if unknown:
            raise TypeError(f"clreduce.{public}() got an unexpected keyword argument {unknown[0]!r} "
                            f"(the {chosen.name} backend takes: {', '.join(known)})")
    if chosen.name == "opencl":
        from .backends.opencl import check_queue

        check_queue(where.get("queue"))


def _out_dtype(out) -> np.dtype | None:
    if out is None:
        return None
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        raise TypeError(f"out must be an array, not {type(out).__name__}")
    return _numpy_dtype(out.dtype)


def _check_out(out, shape: tuple, dtype: np.dtype, op_name: str):
    if out is None:
        return
    _out_dtype(out)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(out.shape)}, but {op_name} gives shape {tuple(shape)}")
    if not np.can_cast(dtype, _numpy_dtype(out.dtype), casting="same_kind"):
        raise OutDtypeError(f"cannot write {op_name}'s {dtype} result into out of dtype {out.dtype} (same_kind casting)")


def _numpy_dtype(dtype) -> np.dtype:
    """numpy's dtype for numpy/cupy/pyopencl dtypes and torch's (``torch.float32``)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype).removeprefix("torch."))


# ---- numpy's type rules, asked of numpy itself ---------------------------------------------

_NUMPY_FUNCS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
                "any": np.any, "all": np.all, "nansum": np.nansum, "nanmean": np.nanmean,
                "nanmax": np.nanmax, "nanmin": np.nanmin, "var": np.var, "std": np.std,
                "argmax": np.argmax, "argmin": np.argmin}


def _numpy_call(name: str, in_dtype: np.dtype, dtype, out_dtype, scalar_out: bool):
    # numpy accepts more casts into a 0-d out= than into an array out=: ask in the same form
    sample = np.ones((2,) if scalar_out else (2, 1), in_dtype)
    if name == "nanmean" and in_dtype.kind == "f":
        sample[1] = np.nan  # numpy's NaN path has the stricter rules; we apply them always (README)
    kwargs = {"axis": None if scalar_out else 0}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if out_dtype is not None:
        kwargs["out"] = np.empty(() if scalar_out else (1,), out_dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.dtype(_NUMPY_FUNCS[name](sample, **kwargs).dtype)


@functools.lru_cache(maxsize=4096)
def numpy_result_dtype(name: str, in_dtype: np.dtype, dtype=None, out_dtype=None,
                       scalar_out: bool = False) -> np.dtype | None:
    """The dtype numpy's ``name`` returns for this signature, or numpy's exception.

    The rules (which ``dtype=``/``out=`` pairs numpy accepts, and what it returns) are
    numpy's by construction: numpy runs the same call on a two-element array once per
    signature (``scalar_out``: the ``out=`` is 0-d). An ``out=`` numpy refuses raises
    ``OutDtypeError`` (a TypeError, as numpy's). None for reductions numpy does not have.
    """
    if name not in _NUMPY_FUNCS:
        return None
    try:
        return _numpy_call(name, in_dtype, dtype, out_dtype, scalar_out)
    except (TypeError, ValueError) as exc:
        if out_dtype is None:
            raise TypeError(f"clreduce.{name}: {exc}") from None
        try:  # numpy refuses the call: because of out=, or (std(dtype=bool)) without it too?
            _numpy_call(name, in_dtype, dtype, None, scalar_out)
        except (TypeError, ValueError):
            raise TypeError(f"clreduce.{name}: {exc}") from None
        raise OutDtypeError(f"clreduce.{name} cannot write into out of dtype {out_dtype}: {exc}") from None


def _default_sum_dtype(in_dtype: np.dtype) -> np.dtype:
    if in_dtype.kind in "bi" and in_dtype.itemsize < 8:
        return np.dtype(np.int64)
    if in_dtype.kind == "u" and in_dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return in_dtype


def loop_dtype(name: str, in_dtype: np.dtype, dtype=None, out_dtype=None) -> np.dtype | None:
    """The dtype numpy reduces in (its ufunc loop), which decides the value.

    ``dtype=`` wins; else numpy's default (integers sum in 64 bits, integer means in float64,
    float16 means in float32); else, where numpy's reduction takes its loop from ``out=``
    (``add.reduce(a, out=o)`` promotes ``o.dtype`` with ``a.dtype``), that promotion.
    """
    if dtype is not None:
        return np.dtype(dtype)
    if name in ("sum", "prod", "nansum"):
        return np.result_type(out_dtype, in_dtype) if out_dtype is not None else _default_sum_dtype(in_dtype)
    if name in ("mean", "nanmean", "var", "std"):
        if in_dtype.kind in "biu":
            return np.dtype(np.float64)
        if in_dtype == np.float16 and (name == "mean" or (name == "nanmean" and out_dtype is None)):
            return np.dtype(np.float32)  # numpy's mean (and, by our choice, nanmean: README)
    if name in ("mean", "nanmean", "var", "std", "max", "min", "nanmax", "nanmin"):
        return np.result_type(out_dtype, in_dtype) if out_dtype is not None else in_dtype
    return None


def refuse_unemulated_out(name: str, in_dtype: np.dtype, out_dtype) -> None:
    """TypeError for the out= dtypes whose numpy answer no parallel reduction reproduces
    (README, "not supported"); numpy input and dask input (dask_array.reduce) both ask here."""
    if out_dtype is None:
        return
    out_dtype = np.dtype(out_dtype)
    if name in ("max", "min", "nanmax", "nanmin") and not _keeps_order(np.dtype(in_dtype), out_dtype):
        # numpy keeps the running max in out= itself, cast back to out's dtype after every
        # step; when that cast reorders values (signed -> unsigned, narrowing, float -> int)
        # the answer depends on the order of the fold, which no parallel reduction follows
        raise TypeError(f"clreduce.{name} into an out= of dtype {out_dtype} is not supported for "
                        f"{in_dtype} input (the cast reorders values); reduce, then cast the result")
    if name in ("var", "std") and out_dtype.kind in "biu":
        raise TypeError(f"clreduce.{name} into an out= of dtype {out_dtype} is not supported: numpy "
                        "casts the float sum of squares into it before dividing; pass a float out=")


def _keeps_order(src: np.dtype, dst: np.dtype) -> bool:
    """Whether casting ``src`` to ``dst`` is monotone, so max/min commute with it."""
    if src.kind == "b" or dst.kind == "f":
        return True  # rounding to a float type never reorders values
    return dst.kind in "iu" and np.can_cast(src, dst, casting="safe")


_EMPTY_ERRORS = {
    "max": "zero-size array to reduction operation maximum which has no identity",
    "min": "zero-size array to reduction operation minimum which has no identity",
    "nanmax": "zero-size array to reduction operation fmax which has no identity",
    "nanmin": "zero-size array to reduction operation fmin which has no identity",
    "norminf": "zero-size array to reduction operation maximum which has no identity",
    "normneginf": "zero-size array to reduction operation minimum which has no identity",
    "argmax": "attempt to get argmax of an empty sequence",
    "argmin": "attempt to get argmin of an empty sequence",
}


def _empty_result(op, shape, dtype, ddof: float = 0.0):
    if op.empty == "error":
        raise ValueError(_EMPTY_ERRORS[op.name])
    if op.finalize in ("var", "std") and ddof < 0:
        # numpy: no squares over a count of 0 - ddof > 0 is 0 (its warning comes from the mean, 0 / 0);
        # until 2026-11-27 clreduce said NaN and "Degrees of freedom <= 0"
        warnings.warn("invalid value encountered in divide", RuntimeWarning, stacklevel=5)
        return np.zeros(shape, dtype)
    if op.empty == "nan":
        message = "Mean of empty slice." if op.finalize == "mean" else "Degrees of freedom <= 0 for slice"
        warnings.warn(message, RuntimeWarning, stacklevel=5)
        with np.errstate(invalid="ignore"):
            return np.full(shape, np.nan).astype(dtype)
    fill = {"identity": 1 if op.combine == "prod" else 0, "zero": 0, "one": 1, "neginf": -np.inf}[op.empty]
    return np.full(shape, fill, dtype=dtype)


# Non-canonical bools (any nonzero byte is True, numpy's rule): every op on bool input runs
# as an op whose element map or combine already treats a byte as zero / nonzero, so the
# caller's array is never copied to canonicalise it (argmax/argmin excepted: README).
_BOOL_AS = {"sum": "count_nonzero", "nansum": "count_nonzero", "mean": "count_nonzero",
            "nanmean": "count_nonzero", "prod": "all", "max": "any", "nanmax": "any", "min": "all",
            "nanmin": "all", "var": "count_nonzero", "std": "count_nonzero", "logsumexp": "count_nonzero",
            "norm1": "count_nonzero", "norm2": "count_nonzero", "norminf": "any", "normneginf": "all"}


def _host(values):
    return values if isinstance(values, np.ndarray) else to_numpy(values)


def _lacks_fp64(values) -> bool:
    """A pyopencl array on a device without fp64 (rusticl, most Mali / Adreno drivers): its
    library's float64 kernels (astype, arithmetic) fail to build there."""
    device = getattr(getattr(values, "queue", None), "device", None)
    return device is not None and not device.double_fp_config


def _cast(values, dtype):
    """``values.astype(dtype)`` for numpy and device arrays; through the host where the array
    library cannot cast (pyopencl has no bool casts, nor float64 casts without fp64); a no-op
    when the dtype already matches."""
    if values.dtype == dtype:
        return values
    if isinstance(values, np.ndarray):
        return values.astype(dtype)
    if np.dtype(dtype) == np.float64 and _lacks_fp64(values):
        return _same_kind(values, _host(values).astype(dtype))
    try:
        return values.astype(dtype)
    except (TypeError, ValueError):
        return _same_kind(values, _host(values).astype(dtype))


def _is_pyopencl(values) -> bool:
    return type(values).__module__.partition(".")[0] == "pyopencl"


def _same_kind(like, host: np.ndarray):
    """``host`` back on ``like``'s queue when ``like`` is a pyopencl array: a cast the device
    cannot run (pyopencl has no float16 or bool casts) still returns the caller's array kind."""
    if not _is_pyopencl(like):
        return host
    from .backends import cl_transfer

    return cl_transfer.to_device(like.queue, np.array(host, order="C"))  # 0-d stays 0-d


def _c_order(values):
    """``values`` itself, or a device-side C-order copy of a pyopencl array that is not
    C-contiguous. pyopencl's elementwise operators (``!=``, ``astype``) walk a Fortran-ordered
    buffer in memory order and label the result with C strides (a silent transpose), and refuse
    other strided views; every elementwise step the API runs on the caller's array goes
    through here first."""
    if not _is_pyopencl(values):
        return values
    from .backends.opencl import c_order

    return c_order(values)


def _cast_any(values, dtype: np.dtype):
    """_cast for torch tensors too (they cast with ``.to``, not ``.astype``); numpy scalars
    and 0-d results included."""
    if type(values).__module__.partition(".")[0] == "torch":
        import torch

        from .backends.cuda.fast import torch_dtype  # imports no GPU library itself

        return values.to(torch_dtype(torch, dtype))
    if np.isscalar(values):
        return dtype.type(values)
    return _cast(values, dtype)


class _Call:
    """One reduction's resolved input, axes and device run (shared by every public function)."""

    def __init__(self, chosen, x, axes, force, where, trace=None):
        self.chosen, self.x, self.axes, self.where = chosen, x, axes, where
        self.force = _to_force(force)
        self.k = math.prod(x.shape[i] for i in axes)
        self.trace = trace
        if trace is not None:
            trace.chosen, trace.native, trace.force = chosen, x, self.force

    def run(self, op_name: str, requested=None, ddof: float = 0.0, x=None, fallback_ok: bool = False):
        """The device's flat result of ``op_name`` (``requested``: the loop dtype, None = default)."""
        x = self.x if x is None else x
        src, outer, k, inner = self.chosen.layout(x, self.axes, **self.where)
        problem = Problem(rows=outer, row_len=k, inner=inner, dtype=np.dtype(x.dtype).name, op=op_name,
                          acc_dtype=None if requested is None else np.dtype(requested).name, param=float(ddof))
        record = [x is self.x and src is x, problem, None]  # for the fast path (fastpath.learn)
        if self.trace is not None:
            self.trace.runs.append(record)
        try:
            result = self.chosen.reduce(src, problem, force=self.force, **self.where)
        except UnsupportedOnDevice:
            in_dtype = np.dtype(x.dtype)
            if fallback_ok and op_name in ("sum", "nansum") and requested is not None and \
                    np.dtype(requested) == np.float64 and (in_dtype.kind == "b" or
                                                           (in_dtype.kind in "iu" and in_dtype.itemsize <= 4)):
                # a float64 loop of up-to-32-bit integers, chosen by out= on a device without fp64
                # (rusticl, Mali): the exact 64-bit integer sums, made float64 on the host, are
                # that loop's value (it adds them exactly while sums stay below 2**53, and rounds
                # once more than these above). Had raised UnsupportedOnDevice where the same call
                # without out= runs (an outside fuzz run, 2026-11-30).
                return _host(self.run(op_name, None, ddof, x)).astype(np.float64)
            if not fallback_ok or in_dtype != np.float32:
                # Only float32 input keeps numpy's value in its own loop; an integer or float16
                # input summed in its own type where numpy's loop is float64 gives another
                # number (rusticl: uint64 into out=int64, float16 overflowing): refuse instead.
                raise
            # float64 only because out= is float64: the device lacks fp64, so the loop runs
            # in the input's own float type and the result is cast (README, dtype rules)
            return self.run(op_name, None, ddof, x)
        record[2] = result
        if dtype_rule(OPS[op_name], np.dtype(x.dtype), requested).host_divide:
            result = _divide_by_count(self.chosen, result, k)
        return result


def _divide_by_count(chosen, sums, k: int):
    """Integer mean: the exact 64-bit sums as float64, divided by ``k`` (numpy's value).

    A device array on an OpenCL device without fp64 (rusticl, most Mali and Adreno drivers)
    cannot run pyopencl's float64 cast kernel: the divide runs on the host and the float64
    result goes back to the device as bytes, which needs no fp64 support."""
    if isinstance(sums, np.ndarray):
        return sums.astype(np.float64) / k
    if _lacks_fp64(sums):
        return chosen.from_host(to_numpy(sums).astype(np.float64) / k, sums)
    if getattr(sums, "queue", None) is not None:
        # pyopencl divides an array by a scalar as a multiply by its reciprocal (6 / 17 came
        # out an ulp off numpy's); an array divisor is a true, correctly rounded divide
        import pyopencl.array as cla

        totals = sums.astype(np.float64)
        count = cla.empty(totals.queue, totals.shape, np.float64)
        count.fill(float(k))
        return totals / count
    return sums.astype(np.float64) / k


def _sum_in(call: _Call, name: str, loop: np.dtype, from_out: bool):
    """``sum``/``prod``/``nansum`` of the input accumulated as numpy's ``loop`` dtype does."""
    x, in_dtype = call.x, np.dtype(call.x.dtype)
    product = name == "prod"
    if loop.kind == "b":
        if name == "nansum" and in_dtype.kind == "f":
            raise TypeError("clreduce.nansum with dtype=bool on float input is not supported "
                            "(numpy drops NaN, then ORs); use clreduce.any(x[~isnan(x)])")
        return call.run("all" if product else "any")
    if in_dtype.kind == "b":
        return _cast(call.run("all" if product else "count_nonzero"), loop)
    if loop == np.float16 and in_dtype != np.float16:
        # numpy rounds every element to float16 first; so do we (a float16 copy of the input)
        return call.run(name, x=_cast(_c_order(x), np.dtype(np.float16)))
    default = loop == _default_sum_dtype(in_dtype) or (in_dtype == np.float16 and loop == np.float16)
    return _cast(call.run(name, None if default else loop, fallback_ok=from_out), loop)


def _divide(total, count, dtype: np.dtype):
    """numpy's ``true_divide(total, count, out=total, casting='unsafe')`` in ``dtype``.

    numpy's count is an ``intp`` (scalar or array), not a Python int: the divide's loop is
    float64 even when ``dtype`` is float16, whose loop would turn a count past 65504 into inf
    (and the mean into 0)."""
    total = np.array(_host(total), dtype=dtype)
    count = np.intp(count) if np.isscalar(count) else _host(count).astype(np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.true_divide(total, count, out=total, casting="unsafe")


def _compute(call: _Call, name: str, loop, result_dtype: np.dtype, out_dtype, dtype, ddof: float):
    """The flat result of public reduction ``name`` in some dtype that casts to the result's."""
    in_dtype = np.dtype(call.x.dtype)
    from_out = dtype is None and out_dtype is not None
    boolean = in_dtype.kind == "b"
    if name in ("sum", "prod", "nansum"):
        return _sum_in(call, name, loop, from_out)
    if name in ("mean", "nanmean"):
        container = out_dtype if out_dtype is not None else loop
        nan_aware = name == "nanmean" and in_dtype.kind == "f"
        # (a float16 loop is numpy's float16 total, which overflows past 65504: sum, then divide)
        if loop.kind == "f" and loop != np.float16 and container == loop and not nan_aware and not boolean:
            # the kernel's mean divides in the loop dtype, as numpy's true_divide does; the default
            # run gives numpy's default result dtype (float16 for float16 input, whose float32
            # loop must then be asked for by name when dtype= or out= want float32: an outside
            # fuzz run found the total rounded to float16 first, 2026-11-29)
            default = loop == loop_dtype("mean", in_dtype) and dtype is None and out_dtype is None
            return call.run("mean", None if default else loop, fallback_ok=from_out)
        total = _sum_in(call, "nansum" if nan_aware else "sum", loop, from_out)
        count = call.run("count_notnan") if nan_aware else call.k
        return _divide(total, count, container)
    if name in ("var", "std") and ddof != ddof:
        # numpy: count - NaN degrees of freedom, so every variance is NaN (the kernels clamp the
        # divisor at 0 and gave inf; an outside fuzz run, 2026-11-30). Run with ddof 0 for
        # numpy's errors, dtype and shape, then fill.
        return np.full_like(_host(_compute(call, name, loop, result_dtype, out_dtype, dtype, 0.0)), np.nan)
    if name in ("var", "std"):
        if loop.kind != "f":
            raise TypeError(f"clreduce.{name} with dtype={loop} is not supported: numpy truncates the "
                            "mean and squares in that integer type; pass a float dtype")
        refuse_unemulated_out(name, in_dtype, out_dtype)
        if boolean:
            ones = _host(call.run("count_nonzero")).astype(np.float64)
            dof = builtins.max(call.k - ddof, 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                result = ones * (call.k - ones) / (call.k * dof)  # exact moments of 0/1 data
            return np.sqrt(result) if name == "std" else result
        default = loop == in_dtype or (in_dtype.kind in "biu" and loop == np.float64)
        if out_dtype is None or np.finfo(out_dtype).max >= np.finfo(loop).max:
            return call.run(name, None if default else loop, ddof, fallback_ok=from_out)
        # numpy stores the sum of squares in a narrower out= before dividing (it overflows
        # there first): the same steps on the variance times the degrees of freedom
        variance = _host(call.run("var", None if default else loop, ddof, fallback_ok=from_out))
        # numpy's dof: an intp count less ddof (float64 for a float ddof), never a Python int,
        # so the divide below runs in float64 even into a float16 out=
        dof = np.maximum(np.intp(call.k) - ddof, 0)
        if dof == 0:
            # sum of squares / 0: the kernel's variance is already numpy's inf (or NaN where the
            # squares are 0); times 0 it would be NaN everywhere (an outside fuzz run, 2026-11-29)
            result = variance.astype(out_dtype)
            return np.sqrt(result) if name == "std" else result
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            squares = (variance.astype(np.float64) * dof).astype(out_dtype)
            result = np.true_divide(squares, dof, out=squares, casting="unsafe")
            return np.sqrt(result) if name == "std" else result
    if name in ("argmax", "argmin") and boolean:
        # no element map in the arg kernels: canonicalise (a one-byte-per-element copy)
        return call.run(name, x=_c_order(call.x).view(np.uint8) != 0)
    op = _BOOL_AS.get(name, name) if boolean else name
    refuse_unemulated_out(name, in_dtype, out_dtype)
    result = call.run(op)
    if loop is not None and result_dtype.kind != "b":
        result = _cast(result, loop)  # numpy's loop dtype, then the cast to out= (same rounding)
    return result


def _reduce(op_name: str, a, axis=None, *, dtype=None, out=None, keepdims=False, ddof=0.0,
            single_axis=False, backend=None, force=None, where=None, public=None):
    """The shared body of every public reduction: a learned signature runs its launcher
    (fastpath.py); any other call runs ``_reduce_slow`` and may be learned."""
    public = public or op_name
    options = where or {}
    key = fastpath.signature(public, op_name, a, axis, dtype, out, keepdims, ddof, single_axis, backend, force,
                             options)
    if key is None:  # a dask array has no signature either: asked here, not on a learned call's way
        if _is_dask(a):
            return _dask().reduce(public, a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof,
                                  backend=backend, force=force, where=where)
        return _reduce_slow(op_name, a, axis, dtype, out, keepdims, ddof, single_axis, backend, force, options,
                            public)
    where = options
    entry = fastpath.lookup(key)
    if entry is not None:
        result = entry(a, out, where)
        if result is not fastpath.STALE:
            return result
        fastpath.forget(key, entry)
    trace = fastpath.Trace()
    result = _reduce_slow(op_name, a, axis, dtype, out, keepdims, ddof, single_axis, backend, force, where, public,
                          trace)
    fastpath.learn(key, trace, a, out, where)
    return result


def _reduce_slow(op_name, a, axis, dtype, out, keepdims, ddof, single_axis, backend, force, where, public,
                 trace=None):
    """Validate, resolve numpy's rules, plan and run; ``trace`` records what ran."""
    op = OPS[op_name]
    chosen = backend_for(a, backend, config.default_backend())
    _check_options(chosen, public, where)
    x, back_to_caller = chosen.to_native(a)
    in_dtype = check_dtype(x.dtype)  # TypeError for unsupported dtypes, first
    if dtype is not None:
        dtype = check_dtype(dtype, "requested")
    keepdims = _as_flag(keepdims, "keepdims")
    rules = axis_rules_name(public, in_dtype)
    axes = normalize_axis(axis, x.ndim, single=single_axis, zero_d_int=rules in ZERO_D_AXIS_FUNCTIONS,
                          bool_as_index=rules in BOOL_AXIS_AS_INDEX_FUNCTIONS)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else tuple(kept)
    k = math.prod(x.shape[i] for i in axes)
    out_dtype = _out_dtype(out)
    scalar_out = len(out_shape) == 0
    result_dtype = (numpy_result_dtype(public, in_dtype, dtype, out_dtype, scalar_out) if out is not None
                    else numpy_result_dtype(public, in_dtype, dtype, None, scalar_out))
    if result_dtype is None:
        if dtype is not None and op.result in ("bool", "intp"):
            raise TypeError(f"clreduce.{public} does not take dtype=")
        result_dtype = np.dtype(dtype_rule(op, in_dtype, dtype).out)
    if out is not None:
        if tuple(out.shape) != out_shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, but {public} gives shape {out_shape}")
        if public not in _NUMPY_FUNCS:
            _check_out(out, out_shape, result_dtype, public)
    final = out_dtype if out_dtype is not None else result_dtype

    if k == 0 or math.prod(kept) == 0:
        host = _empty_result(op, out_shape, final, ddof) if k == 0 else np.empty(out_shape, final)
        return _deliver(chosen, x, host, out, back_to_caller, where)
    if op.finalize in ("var", "std") and k - ddof <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
        if trace is not None:
            trace.refused = True  # the warning is part of every such call
    if op.finalize in ("var", "std") and ddof != ddof and trace is not None:
        trace.refused = True  # _compute answers a NaN ddof on the host

    call = _Call(chosen, x, axes, force, where, trace)
    loop = loop_dtype(public, in_dtype, dtype, out_dtype)
    result = _compute(call, "nanmean" if public == "nanmean" else op_name, loop, result_dtype, out_dtype,
                      dtype, ddof)
    if op_name == "logsumexp" and in_dtype.kind == "b":
        ones = _host(result).astype(np.float64)
        result = np.log(k + ones * (np.e - 1))  # log(c*e + (k - c)): 0/1 data in closed form
    elif op_name.startswith("norm") and in_dtype.kind == "b":
        result = _host(result).astype(np.float64)
        result = np.sqrt(result) if op_name == "norm2" else result
    with np.errstate(invalid="ignore", over="ignore"):
        result = _cast(result, final)
    if tuple(result.shape) != out_shape:
        result = result.reshape(out_shape)
    if trace is not None:
        trace.delivered = result
    return _deliver(chosen, x, result, out, back_to_caller, where)


def _is_dask(a) -> bool:
    # by type name: asking must not import dask (an optional extra)
    return type(a).__module__.partition(".")[0] == "dask" and hasattr(a, "chunks")


def _dask():
    from . import dask_array

    return dask_array


def _deliver(chosen, x, result, out, back_to_caller, where):
    """Put ``result`` where the caller wants it: ``out=``, or the input's array kind."""
    if isinstance(result, np.ndarray) and not isinstance(x, np.ndarray):
        result = chosen.from_host(result, like=x, **where)
    if out is not None:
        chosen.write_out(out, result)
        return out
    result = back_to_caller(result)
    if isinstance(result, np.ndarray) and result.ndim == 0:
        return result[()]  # numpy returns a scalar when every axis is reduced
    return result


def _warn_if_nan(result, message: str):
    values = result if isinstance(result, np.ndarray) or np.isscalar(result) else None
    if values is not None and np.any(np.isnan(values)):
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    return result


# ---- public functions --------------------------------------------------------------------

def sum(a, axis=None, dtype=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Sum over the given axes, with numpy's dtype and ``out=`` rules.

    float16 accumulates in float32; integers in 64 bits (``dtype=``/``out=`` of a narrower
    integer type wrap as numpy's do); bool counts the nonzero bytes.
    """
    return _reduce("sum", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Arithmetic mean; integer input gives float64 (exact integer sum, then a divide)."""
    return _reduce("mean", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Product over the given axes (numpy's dtype rules: small integers multiply in 64 bits)."""
    return _reduce("prod", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def max(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Maximum; NaN propagates as in numpy."""
    return _reduce("max", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def min(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Minimum; NaN propagates as in numpy."""
    return _reduce("min", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def any(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """True where any element is nonzero (NaN counts as nonzero, as in numpy)."""
    return _reduce("any", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def all(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """True where every element is nonzero."""
    return _reduce("all", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


# numpy 1.x returned a Python int from count_nonzero(axis=None), numpy 2.4 an intp scalar:
# clreduce returns what the installed numpy does
_COUNT_IS_PYTHON_INT = type(np.count_nonzero(np.ones(1))) is int


def count_nonzero(a, axis=None, *, keepdims=False, backend=None, force=None, **where):
    """Number of nonzero elements (with every axis reduced, of the installed numpy's type: a
    Python int or an intp scalar)."""
    result = _reduce("count_nonzero", a, axis, keepdims=keepdims, backend=backend, force=force, where=where)
    if _COUNT_IS_PYTHON_INT and axis is None and not keepdims and isinstance(result, np.integer):
        return int(result)
    return result


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Sum treating NaN as zero."""
    return _reduce("nansum", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force, where=where)


def nanmax(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Maximum ignoring NaN; an all-NaN slice gives NaN and a RuntimeWarning, as in numpy."""
    result = _reduce("nanmax", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)
    return _warn_if_nan(result, "All-NaN slice encountered")


def nanmin(a, axis=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Minimum ignoring NaN; an all-NaN slice gives NaN and a RuntimeWarning, as in numpy."""
    result = _reduce("nanmin", a, axis, out=out, keepdims=keepdims, backend=backend, force=force, where=where)
    return _warn_if_nan(result, "All-NaN slice encountered")


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, backend=None, force=None, **where):
    """Mean ignoring NaN: ``nansum / count of non-NaN``; an all-NaN slice gives NaN.

    Float input follows numpy's NaN-path rules whether or not the data hold a NaN
    (``dtype=``/``out=`` must be inexact); float16 totals stay in float32 (README).
    """
    result = _reduce("mean", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force,
                     where=where, public="nanmean")
    values = result if isinstance(result, np.ndarray) or np.isscalar(result) else None
    if values is not None and np.asarray(values).dtype.kind == "f" and np.any(np.isnan(values)):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    return result


def _ddof(ddof, correction) -> float:
    """numpy's ``ddof``/``correction`` pair (the array-API spelling is ``correction``)."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if isinstance(ddof, (bool, np.bool_)):
        ddof = int(ddof)  # numpy takes True as 1
    if not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise TypeError(f"ddof must be a real number, not {type(ddof).__name__}")
    if type(ddof) is int and not -2**63 <= ddof < 2**63:
        # numpy converts a Python int ddof to a C long first (numpy integers and floats pass)
        raise OverflowError("Python int too large to convert to C long")
    return float(ddof)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None, backend=None,
        force=None, **where):
    """Variance in one pass (Welford per lane, Chan's merge across lanes and groups).

    ``correction`` is the array-API name of ``ddof`` (give one of them, as numpy).
    """
    return _reduce("var", a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=_ddof(ddof, correction),
                   backend=backend, force=force, where=where)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None, backend=None,
        force=None, **where):
    """Standard deviation: ``sqrt(var)``, same one-pass algorithm; ``correction`` as in ``var``."""
    return _reduce("std", a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=_ddof(ddof, correction),
                   backend=backend, force=force, where=where)


def argmax(a, axis=None, out=None, *, keepdims=False, backend=None, force=None, **where):
    """Index of the maximum (first on ties, first NaN wins); a flat index when axis is None."""
    return _reduce("argmax", a, axis, out=out, keepdims=bool(keepdims), single_axis=True, backend=backend,
                   force=force, where=where)


def argmin(a, axis=None, out=None, *, keepdims=False, backend=None, force=None, **where):
    """Index of the minimum (first on ties, first NaN wins); a flat index when axis is None."""
    return _reduce("argmin", a, axis, out=out, keepdims=bool(keepdims), single_axis=True, backend=backend,
                   force=force, where=where)


def logsumexp(a, axis=None, keepdims=False, *, backend=None, force=None, **where):
    """``log(sum(exp(a)))`` computed max-shifted in one pass; rows of -inf give -inf.

    An empty reduction gives -inf, the log of an empty sum (``scipy.special.logsumexp``
    since SciPy 1.14 and ``torch.logsumexp`` give the same; until 2026-11-27 clreduce raised
    ValueError as numpy's ``max`` does).
    """
    return _reduce("logsumexp", a, axis, keepdims=keepdims, backend=backend, force=force, where=where)


def check_norm_request(dtype, ndim: int, ord, axis) -> None:
    """What ``norm`` refuses before any work, for every array kind (dask too).

    The dtype first: a complex input cast to float64 would drop its imaginary part and
    return a wrong number, so unsupported dtypes are a TypeError, as for every reduction.
    """
    check_dtype(dtype)
    if axis is None and ord is not None and ndim == 0:
        raise ValueError("Improper number of dimensions to norm.")
    if axis is None and ord is not None and ndim >= 2:
        raise ValueError("matrix norms are not supported: pass an int axis for vector norms")
    if isinstance(axis, tuple) and len(axis) != 1:
        raise ValueError("matrix norms (two axes) are not supported: pass one axis")


_NORM_OPS = {1: "norm1", 2: "norm2", np.inf: "norminf", -np.inf: "normneginf"}


def norm(x, ord=None, axis=None, keepdims=False, *, backend=None, force=None, **where):
    """Vector norm along ``axis`` (``numpy.linalg.norm`` for vectors).

    ``ord`` may be None or 2 (Euclidean), 1, inf, -inf or 0 (count of nonzeros). Matrix
    norms (two axes, or axis=None with ``ord`` on a 2-D input) raise ValueError.
    """
    if _is_dask(x):
        return _dask().reduce("norm", x, axis, ord=ord, keepdims=keepdims, backend=backend, force=force,
                              where=where)
    arr = x if hasattr(x, "dtype") else np.asarray(x)
    dtype = _numpy_dtype(arr.dtype)  # torch tensors too (np.dtype(torch.float32) is a TypeError)
    check_norm_request(dtype, arr.ndim, ord, axis)
    if dtype.kind not in "fb" and _lacks_fp64(arr):
        # numpy.linalg.norm converts integers to float64 first (numpy input goes the same way
        # and is refused by the planner); pyopencl's float64 cast would fail to build
        raise UnsupportedOnDevice(f"clreduce.norm of {arr.dtype} input works in float64, which device "
                                  f"{arr.queue.device.name!r} lacks; convert the input with .astype(numpy.float32)")
    if ord == 0:
        count = _reduce("count_nonzero", x, axis, keepdims=keepdims, backend=backend, force=force, where=where,
                        public="norm")
        return _cast_any(count, np.dtype(np.float64) if dtype.kind != "f" else dtype)
    if ord is None:
        ord = 2
    if ord not in _NORM_OPS:
        raise ValueError(f"ord={ord!r} is not supported (supported: None, 1, 2, inf, -inf, 0)")
    if dtype.kind not in "fb":
        # numpy.linalg.norm converts integers to float first
        x = _cast_any(_c_order(arr), np.dtype(np.float64))
        try:
            return _reduce(_NORM_OPS[ord], x, axis, keepdims=keepdims, backend=backend, force=force, where=where,
                           public="norm")
        except UnsupportedOnDevice:
            # the planner's advice (dtype=float32) is no way out here: norm has no dtype=
            raise UnsupportedOnDevice(f"clreduce.norm of {dtype} input works in float64, as numpy.linalg.norm "
                                      "does, which this device lacks (no cl_khr_fp64); convert the input with "
                                      ".astype(numpy.float32) or pick a device with fp64") from None
    # bool input runs as a count / any / all of nonzero bytes (no float copy; _BOOL_AS)
    return _reduce(_NORM_OPS[ord], x, axis, keepdims=keepdims, backend=backend, force=force, where=where,
                   public="norm")
