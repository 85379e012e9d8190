"""numpy semantics: axis, keepdims, dtype, out, empty and NaN rules; then a backend runs it.

Every request becomes ``(outer, K, inner)`` here or in the backend's ``layout``: reduce the
middle axis; adjacent reduced axes of a C-contiguous array merge with no copy, anything
else (non-adjacent axes, non-contiguous views) is copied once into C order with the reduced
axes last (documented in the README).
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from . import config
from .backends import backend_for
from .ops import OPS, dtype_rule
from .plan import Force, Problem

try:  # numpy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover
    from numpy import AxisError


class OutDtypeError(ValueError, TypeError):
    """``out=`` cannot hold the result's dtype under numpy's same_kind casting.

    A ValueError (as our docs promise for bad ``out=``) and a TypeError (what numpy raises).
    """


def normalize_axis(axis, ndim: int, *, single: bool = False) -> tuple[int, ...]:
    """Sorted non-negative axes; AxisError / ValueError / TypeError as numpy raises them."""
    if axis is None:
        return tuple(range(ndim))
    if single and isinstance(axis, tuple):
        raise TypeError("'tuple' object cannot be interpreted as an integer (this function takes one axis)")
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
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


def _check_out(out, shape: tuple, dtype: np.dtype, op_name: str):
    if out is None:
        return
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        raise TypeError(f"out must be an array, not {type(out).__name__}")
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


_EMPTY_ERRORS = {
    "max": "zero-size array to reduction operation maximum which has no identity",
    "min": "zero-size array to reduction operation minimum which has no identity",
    "nanmax": "zero-size array to reduction operation fmax which has no identity",
    "nanmin": "zero-size array to reduction operation fmin which has no identity",
    "norminf": "zero-size array to reduction operation maximum which has no identity",
    "normneginf": "zero-size array to reduction operation minimum which has no identity",
    "argmax": "attempt to get argmax of an empty sequence",
    "argmin": "attempt to get argmin of an empty sequence",
    "logsumexp": "logsumexp of an empty reduction has no value",
}


def _empty_result(op, shape, dtype):
    if op.empty == "error":
        raise ValueError(_EMPTY_ERRORS[op.name])
    if op.empty == "nan":
        message = "Mean of empty slice." if op.finalize == "mean" else "Degrees of freedom <= 0 for slice"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        return np.full(shape, np.nan, dtype=dtype)
    fill = {"identity": 1 if op.combine == "prod" else 0, "zero": 0, "one": 1}[op.empty]
    return np.full(shape, fill, dtype=dtype)


def _reduce(op_name: str, a, axis=None, *, dtype=None, out=None, keepdims=False, ddof=0.0,
            single_axis=False, backend=None, force=None, where=None):
    """The shared body of every public reduction."""
    if _is_dask(a):
        return _dask().reduce(op_name, a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof,
                              backend=backend, force=force, where=where)
    op = OPS[op_name]
    where = where or {}
    chosen = backend_for(a, backend, config.default_backend())
    x, back_to_caller = chosen.to_native(a)
    rule = dtype_rule(op, x.dtype, dtype)  # TypeError for unsupported dtypes, first
    axes = normalize_axis(axis, x.ndim, single=single_axis)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else tuple(kept)
    k = math.prod(x.shape[i] for i in axes)
    out_dtype = np.dtype(rule.out)
    _check_out(out, out_shape, out_dtype, op_name)

    if k == 0 or math.prod(kept) == 0:
        host = _empty_result(op, out_shape, out_dtype) if k == 0 else np.empty(out_shape, out_dtype)
        return _deliver(chosen, x, host, out, back_to_caller, where)
    if op.finalize in ("var", "std") and k - ddof <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)

    src, outer, k, inner = chosen.layout(x, axes, **where)
    problem = Problem(rows=outer, row_len=k, inner=inner, dtype=x.dtype.name, op=op_name,
                      acc_dtype=None if dtype is None else np.dtype(dtype).name, param=float(ddof))
    result = chosen.reduce(src, problem, force=_to_force(force), **where)
    if rule.host_divide:
        # Integer mean: exact 64-bit sum on the device, the float64 divide after (numpy's way).
        result = result.astype(np.float64) / k
    if result.dtype != out_dtype:
        result = result.astype(out_dtype)
    if tuple(result.shape) != out_shape:
        result = result.reshape(out_shape)
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
    """Sum over the given axes; float16 accumulates in float32, integers in 64 bits."""
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


def count_nonzero(a, axis=None, *, keepdims=False, backend=None, force=None, **where):
    """Number of nonzero elements (an int when every axis is reduced, like numpy)."""
    result = _reduce("count_nonzero", a, axis, keepdims=keepdims, backend=backend, force=force, where=where)
    return int(result) if axis is None and not keepdims and isinstance(result, np.integer) else result


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
    """Mean ignoring NaN: ``nansum / count of non-NaN``; an all-NaN slice gives NaN."""
    if _is_dask(a):
        return _dask().reduce("nanmean", a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend,
                              force=force, where=where)
    x = a if hasattr(a, "dtype") else np.asarray(a)
    if np.dtype(x.dtype).kind != "f":
        return mean(a, axis, dtype=dtype, out=out, keepdims=keepdims, backend=backend, force=force, **where)
    kw = dict(keepdims=keepdims, backend=backend, force=force, where=where)
    # float16 totals stay in float32 until after the divide: a float16 sum overflows at 65504
    sum_dtype = np.float32 if dtype is None and np.dtype(x.dtype) == np.float16 else dtype
    total = _reduce("nansum", a, axis, dtype=sum_dtype, **kw)
    count = _reduce("count_notnan", a, axis, **kw)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = total / count
    result_dtype = np.dtype(dtype) if dtype is not None else np.dtype(x.dtype)
    result = result.astype(result_dtype) if hasattr(result, "astype") else result_dtype.type(result)
    if isinstance(count, (np.ndarray, np.integer)) and np.any(np.asarray(count) == 0):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    if out is not None:
        _check_out(out, np.shape(result), np.dtype(result_dtype), "nanmean")
        out[...] = result
        return out
    return result


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, backend=None, force=None, **where):
    """Variance in one pass (Welford per lane, Chan's merge across lanes and groups)."""
    return _reduce("var", a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof, backend=backend,
                   force=force, where=where)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, backend=None, force=None, **where):
    """Standard deviation: ``sqrt(var)``, same one-pass algorithm."""
    return _reduce("std", a, axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof, backend=backend,
                   force=force, where=where)


def argmax(a, axis=None, out=None, *, keepdims=False, backend=None, force=None, **where):
    """Index of the maximum (first on ties, first NaN wins); a flat index when axis is None."""
    return _reduce("argmax", a, axis, out=out, keepdims=keepdims, single_axis=True, backend=backend,
                   force=force, where=where)


def argmin(a, axis=None, out=None, *, keepdims=False, backend=None, force=None, **where):
    """Index of the minimum (first on ties, first NaN wins); a flat index when axis is None."""
    return _reduce("argmin", a, axis, out=out, keepdims=keepdims, single_axis=True, backend=backend,
                   force=force, where=where)


def logsumexp(a, axis=None, keepdims=False, *, backend=None, force=None, **where):
    """``log(sum(exp(a)))`` computed max-shifted in one pass; rows of -inf give -inf."""
    return _reduce("logsumexp", a, axis, keepdims=keepdims, backend=backend, force=force, where=where)


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
    if axis is None and ord is not None and arr.ndim == 0:
        raise ValueError("Improper number of dimensions to norm.")
    if axis is None and ord is not None and arr.ndim >= 2:
        raise ValueError("matrix norms are not supported: pass an int axis for vector norms")
    if isinstance(axis, tuple) and len(axis) != 1:
        raise ValueError("matrix norms (two axes) are not supported: pass one axis")
    if ord == 0:
        count = _reduce("count_nonzero", x, axis, keepdims=keepdims, backend=backend, force=force, where=where)
        return count.astype(np.float64 if np.dtype(arr.dtype).kind != "f" else arr.dtype)
    if ord is None:
        ord = 2
    if ord not in _NORM_OPS:
        raise ValueError(f"ord={ord!r} is not supported (supported: None, 1, 2, inf, -inf, 0)")
    if np.dtype(arr.dtype).kind != "f":
        x = arr.astype(np.float64)  # numpy.linalg.norm converts integers to float first
    return _reduce(_NORM_OPS[ord], x, axis, keepdims=keepdims, backend=backend, force=force, where=where)
