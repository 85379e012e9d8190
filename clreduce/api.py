"""numpy semantics: axis, keepdims, dtypes, empty reductions; then hand rows to a backend."""

from __future__ import annotations

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


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative axes; AxisError / ValueError / TypeError as numpy raises them."""
    if axis is None:
        return tuple(range(ndim))
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


def reduce(op_name: str, a, axis=None, keepdims: bool = False, *, backend=None, force=None, **where):
    """Reduce ``a`` over ``axis`` with op ``op_name``; the shared body of the public functions.

    ``where`` holds backend placement options (OpenCL: ``device``, ``queue``).
    """
    op = OPS[op_name]
    chosen = backend_for(a, backend, config.default_backend())
    x, back_to_caller = chosen.to_native(a)
    rule = dtype_rule(op, x.dtype)  # TypeError for unsupported dtypes, before anything else
    axes = normalize_axis(axis, x.ndim)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else tuple(kept)
    k = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    rows = int(np.prod(kept, dtype=np.int64))
    out_dtype = np.dtype(rule.out)

    if k == 0:
        if op.empty == "error":
            name = {"max": "maximum", "min": "minimum"}[op.combine]
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if op.empty == "nan":
            warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
            return back_to_caller(_finish(np.full(out_shape, np.nan, dtype=out_dtype)))
        return back_to_caller(_finish(np.zeros(out_shape, dtype=out_dtype)))
    if rows == 0:
        return back_to_caller(_finish(np.empty(out_shape, dtype=out_dtype)))

    # Reduced axes go last so each output element is one contiguous row. A copy happens
    # only when they are not already trailing and contiguous.
    kept_axes = [i for i in range(x.ndim) if i not in axes]
    rows2d = chosen.rows_view(x, kept_axes + list(axes), rows, k)
    problem = Problem(rows=rows, row_len=k, dtype=x.dtype.name, op=op_name)
    result = chosen.reduce_rows(rows2d, problem, force=_to_force(force), **where)
    if rule.host_divide:
        # Integer mean: exact 64-bit sum on the device, the float64 divide here (numpy's way).
        result = result.astype(np.float64) / k
    if x.dtype == np.bool_ and op.combine != "sum":
        result = result.astype(np.bool_)
    return back_to_caller(_finish(result.astype(out_dtype, copy=False).reshape(out_shape)))


def _finish(result: np.ndarray):
    """numpy returns a scalar, not a 0-d array, when every axis is reduced."""
    return result[()] if result.ndim == 0 else result


def _public(op_name: str, summary: str):
    def fn(a, axis=None, keepdims=False, *, backend=None, force=None, **where):
        return reduce(op_name, a, axis=axis, keepdims=keepdims, backend=backend, force=force, **where)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"""{summary}

    Parameters
    ----------
    a : array_like
        Input (numpy array or anything ``numpy.asarray`` accepts).
    axis : None or int or tuple of ints, optional
        Axes to reduce, as in numpy. None reduces all.
    keepdims : bool, optional
        Keep reduced axes with size one.
    backend : {"opencl", "cuda"}, optional
        Default: CLREDUCE_BACKEND, else the array's kind (cupy / CUDA torch -> cuda), else opencl.
    force : clreduce.Force or dict, optional
        Override plan choices (sub-group mode/width, strategy, work-group size, vector width).

    **where
        Placement for the backend. OpenCL: ``device`` (pyopencl.Device or a selector
        string like ``"intel"``) or ``queue`` (pyopencl.CommandQueue).

    Returns
    -------
    numpy.ndarray or numpy scalar
        Same dtype and values as ``numpy.{op_name}`` within the tolerances in the README.
    """
    return fn


sum = _public("sum", "Sum of array elements over the given axes (float16 accumulates in float32).")
mean = _public("mean", "Arithmetic mean over the given axes; integer input gives float64 as numpy does.")
max = _public("max", "Maximum over the given axes; NaN propagates as in numpy.")
min = _public("min", "Minimum over the given axes; NaN propagates as in numpy.")
