"""Fused row operations: softmax, log_softmax, rms_norm, layer_norm, moments, absmax_scale,
quantize_int8, dequantize.

Each op reduces a row to one or two statistics and (except ``moments``) writes the row
back transformed, in one kernel launch (``clreduce/plan_rowops.py`` picks the variant).
Inputs are numpy arrays (result: numpy) or pyopencl arrays (result: pyopencl arrays on the
input's queue). Math runs in float32 (float64 for float64 input); float16 is only storage.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .plan_rowops import FLOAT_DTYPES, INT_DTYPES, RowForce, RowProblem, out_dtype_of

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

__all__ = ["softmax", "log_softmax", "rms_norm", "layer_norm", "moments", "absmax_scale", "quantize_int8",
           "dequantize", "cumsum", "cumprod", "logcumsumexp"]


# ---- argument checks -------------------------------------------------------------------------
def _as_native(x):
    """(array, is_pyopencl): pyopencl arrays as they are, anything else through numpy."""
    if type(x).__module__.startswith("pyopencl") and hasattr(x, "base_data"):
        return x, True
    a = np.asarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a, False


def _float_input(x, op: str):
    a, on_device = _as_native(x)
    if a.dtype.name not in FLOAT_DTYPES:
        raise TypeError(f"{op} needs float16, float32 or float64 input, not {a.dtype} "
                        "(no silent cast: convert with .astype(numpy.float32))")
    return a, on_device


def _axis(axis, ndim: int, op: str) -> int:
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{op} takes one axis (an int), not {axis!r}")
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an int, not {type(axis).__name__}") from None
    if not -ndim <= ax < ndim:
        raise AxisError(ax, ndim)
    return ax % ndim


def _eps(eps, op: str) -> float:
    value = float(eps)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{op}: eps must be a finite number > 0, not {eps!r}")
    return value


def _row_param(p, name: str, k: int, op: str):
    """weight / bias: None, or a float array of shape (K,) (K = the last axis)."""
    if p is None:
        return None
    a, on_device = _as_native(p)
    if a.dtype.name not in FLOAT_DTYPES:
        raise TypeError(f"{op}: {name} must be a float array, not {a.dtype}")
    if tuple(a.shape) != (k,):
        raise ValueError(f"{op}: {name} must have the shape of the last axis ({k},), not {tuple(a.shape)}")
    return a


# ---- running ----------------------------------------------------------------------------------
def _queue(a, on_device: bool, device, queue):
    from .backends.opencl import queue_for

    if on_device:
        if queue is not None and queue.context != a.context:
            raise ValueError("queue= belongs to another context than the input pyopencl array")
        return queue or a.queue
    return queue_for(device, queue)


def _to_last(a, on_device: bool, ax: int, queue):
    """A C-contiguous copy (or the array itself) with axis ``ax`` last, as (rows, K)."""
    order = [i for i in range(a.ndim) if i != ax] + [ax]
    if on_device:
        from .backends.opencl import gather

        if ax == a.ndim - 1 and a.flags.c_contiguous:
            moved = a
        else:
            moved = gather(queue, a, order)
    else:
        moved = np.ascontiguousarray(a.transpose(order))
    return moved, order


def _from_last(res, on_device: bool, order: list[int], queue, moved_shape):
    """Undo ``_to_last`` for a result shaped like the moved array."""
    res = res.reshape(moved_shape)
    if order == sorted(order):
        return res
    inverse = list(np.argsort(order))
    if on_device:
        from .backends.opencl import gather

        return gather(queue, res, inverse)
    return np.ascontiguousarray(res.transpose(inverse))


def _run(op: str, a, on_device: bool, ax: int, device, queue, force, **kwargs):
    """(out in the input's layout, stats shaped like the input without ``ax``, queue)."""
    from .backends import opencl_rowops

    q = _queue(a, on_device, device, queue)
    moved, order = _to_last(a, on_device, ax, q)
    k = moved.shape[-1]
    rows = math.prod(moved.shape[:-1])
    if rows == 0 or k == 0:
        return None, None, q, moved, order
    problem = RowProblem(op=op, rows=rows, row_len=k, dtype=a.dtype.name,
                         weight=kwargs.get("weight") is not None, bias=kwargs.get("bias") is not None)
    out, stats = opencl_rowops.run(q, problem, moved, force=force, **kwargs)
    return out, stats, q, moved, order


def _host_or_device(res, on_device: bool):
    return res if on_device else res.get()


def _cast(res, dtype, on_device: bool):
    """``res`` (a pyopencl array) as ``dtype``, on the device or the host. pyopencl has no
    float16 arithmetic type, so a float16 result is cast on the host and sent back."""
    dtype = np.dtype(dtype)
    if res.dtype == dtype:
        return _host_or_device(res, on_device)
    if dtype == np.float16:
        with np.errstate(over="ignore"):  # beyond 65504 the float16 result is inf, as numpy's
            host = res.get().astype(dtype)
        if on_device:
            import pyopencl.array as cla

            return cla.to_device(res.queue, host)
        return host
    return _host_or_device(res.astype(dtype), on_device)


# ---- public functions -------------------------------------------------------------------------
def _softmax(op, x, axis, device, queue, force):
    a, on_device = _float_input(x, op)
    ax = _axis(axis, a.ndim, op)
    out, _, q, moved, order = _run(op, a, on_device, ax, device, queue, force)
    if out is None:
        return _empty_like(a, on_device, q)
    return _from_last(_host_or_device(out, on_device), on_device, order, q, moved.shape)


def _empty_like(a, on_device, q, dtype=None):
    import pyopencl.array as cla  # noqa: F401 - only reached for pyopencl input

    dtype = np.dtype(dtype or a.dtype)
    if on_device:
        return cla.empty(q, a.shape, dtype)
    return np.empty(a.shape, dtype)


def softmax(x, axis=-1, *, device=None, queue=None, force: RowForce | None = None):
    """Softmax along one axis: ``exp(x - max) / sum(exp(x - max))``.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64. float16 is read and written as half, computed in float32.
    axis : int, optional
        The axis to normalise (default the last).
    device : pyopencl.Device or str, optional
        Where to run numpy input (default: clreduce's default device).
    queue : pyopencl.CommandQueue, optional
        Queue to run on (for pyopencl input: one of its context).
    force : RowForce, optional
        Plan override (cache, sub-group mode/width, lanes, work-group size) for testing.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Same shape and dtype as ``x``.

    Notes
    -----
    Follows ``scipy.special.softmax``: the shift is the row's max, so a row holding NaN or
    +inf, and a row of only -inf, gives NaN everywhere; -inf elements of other rows give 0.

    Raises
    ------
    TypeError
        Input that is not float (no silent cast), or a tuple axis.
    numpy.exceptions.AxisError
        ``axis`` out of range (including any axis of a 0-d input).
    """
    return _softmax("softmax", x, axis, device, queue, force)


def log_softmax(x, axis=-1, *, device=None, queue=None, force: RowForce | None = None):
    """Log of the softmax along one axis: ``(x - s) - log(sum(exp(x - s)))``.

    Parameters
    ----------
    x, axis, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Same shape and dtype as ``x``.

    Notes
    -----
    Follows ``scipy.special.log_softmax``: ``s`` is the row's max when finite, else 0. A
    row with NaN gives NaN; a row of only -inf gives NaN; a row holding +inf gives NaN at
    the +inf elements and -inf elsewhere.
    """
    return _softmax("log_softmax", x, axis, device, queue, force)


def _norm(op, x, weight, bias, eps, device, queue, force):
    a, on_device = _float_input(x, op)
    if a.ndim == 0:
        raise AxisError(-1, 0)
    eps = _eps(eps, op)
    k = a.shape[-1]
    w = _row_param(weight, "weight", k, op)
    b = _row_param(bias, "bias", k, op)
    acc = np.float64 if a.dtype == np.float64 else np.float32
    w, b = _param_in_math_type(w, acc), _param_in_math_type(b, acc)
    out, _, q, moved, order = _run(op, a, on_device, a.ndim - 1, device, queue, force, weight=w, bias=b, eps=eps)
    if out is None:
        return _empty_like(a, on_device, q)
    return _from_last(_host_or_device(out, on_device), on_device, order, q, moved.shape)


def _param_in_math_type(p, acc):
    """weight / bias as the kernel reads them (ACC_T): numpy arrays are converted when
    uploaded; a pyopencl array of another dtype goes through the host (pyopencl has no
    float16 arithmetic to convert it on the device)."""
    if p is None or isinstance(p, np.ndarray) or p.dtype == acc:
        return p
    return p.get().astype(acc)


def rms_norm(x, weight=None, eps=1e-6, *, device=None, queue=None, force: RowForce | None = None):
    """RMS normalisation over the last axis: ``x / sqrt(mean(x**2) + eps) * weight``.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64 (float16 computed in float32).
    weight : array_like, optional
        Shape ``(x.shape[-1],)``, broadcast along every row; used in the math type.
    eps : float, optional
        Added to the mean square; must be > 0.
    device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Same shape and dtype as ``x``.

    Raises
    ------
    TypeError
        Non-float ``x`` or ``weight``.
    ValueError
        ``weight`` not of shape ``(x.shape[-1],)``; ``eps <= 0`` or not finite.
    numpy.exceptions.AxisError
        0-d ``x``.
    """
    return _norm("rms_norm", x, weight, None, eps, device, queue, force)


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, device=None, queue=None, force: RowForce | None = None):
    """Layer normalisation over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias``.

    The statistics come from one pass over the row, shifted by its first element with
    Neumaier-compensated sums, so float32 rows with a large mean stay accurate; ``var`` is
    the biased (ddof 0) variance, as in ``torch.nn.functional.layer_norm``.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64 (float16 computed in float32).
    weight, bias : array_like, optional
        Shape ``(x.shape[-1],)``, broadcast along every row.
    eps : float, optional
        Added to the variance; must be > 0.
    device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Same shape and dtype as ``x``.

    Raises
    ------
    TypeError, ValueError, numpy.exceptions.AxisError
        As for :func:`rms_norm`.
    """
    return _norm("layer_norm", x, weight, bias, eps, device, queue, force)


def moments(x, axis=-1, *, device=None, queue=None, force: RowForce | None = None):
    """Mean and (biased, ddof 0) variance along one axis, from one pass over the data.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64.
    axis : int, optional
    device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    mean, var : numpy.ndarray or pyopencl.array.Array
        Shape of ``x`` without ``axis``; dtype of ``x`` (computed in float32 for float16,
        as numpy's ``mean``/``var`` of float16 accumulate in float32). An empty axis gives NaN.
    """
    a, on_device = _float_input(x, "moments")
    ax = _axis(axis, a.ndim, "moments")
    _, stats, q, moved, _ = _run("moments", a, on_device, ax, device, queue, force)
    shape = moved.shape[:-1]
    if stats is None:
        nan = np.full(shape, np.nan, a.dtype)
        if on_device:
            import pyopencl.array as cla

            return cla.to_device(q, nan), cla.to_device(q, nan.copy())
        return nan, nan.copy()
    return _cast(stats[0], a.dtype, on_device).reshape(shape), _cast(stats[1], a.dtype, on_device).reshape(shape)


def _scale(op, x, axis, device, queue, force):
    a, on_device = _float_input(x, op)
    ax = _axis(axis, a.ndim, op)
    out, stats, q, moved, order = _run(op, a, on_device, ax, device, queue, force)
    out_dtype = np.int8 if op == "quantize_int8" else a.dtype
    scale_dtype = np.float32 if op == "quantize_int8" else a.dtype
    shape = moved.shape[:-1]
    if out is None:
        zeros = np.zeros(shape, scale_dtype)
        if on_device:
            import pyopencl.array as cla

            return _empty_like(a, True, q, out_dtype), cla.to_device(q, zeros)
        return np.empty(a.shape, out_dtype), zeros
    values = _from_last(_host_or_device(out, on_device), on_device, order, q, moved.shape)
    return values, _cast(stats, scale_dtype, on_device).reshape(shape)


def absmax_scale(x, axis=-1, *, device=None, queue=None, force: RowForce | None = None):
    """Divide each row by its largest magnitude: ``(x / amax, amax)``, ``amax = max(|x|)``.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64.
    axis : int, optional
    device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    scaled : numpy.ndarray or pyopencl.array.Array
        Shape and dtype of ``x``. A row whose ``amax`` is 0 (all zeros) gives zeros, not NaN.
        A row holding NaN gives NaN (``amax`` is NaN); one holding ±inf gives 0 at the
        finite elements and NaN at the infinite ones (IEEE ``x / inf``).
    amax : numpy.ndarray or pyopencl.array.Array
        Shape of ``x`` without ``axis``, dtype of ``x``.
    """
    return _scale("absmax_scale", x, axis, device, queue, force)


def quantize_int8(x, axis=-1, *, device=None, queue=None, force: RowForce | None = None):
    """Symmetric per-row int8 quantisation: ``q = rint(x / scale)``, ``scale = max(|x|) / 127``.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64.
    axis : int, optional
    device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    q : numpy.ndarray or pyopencl.array.Array of int8
        Shape of ``x``; values in [-127, 127]. ``rint`` rounds half to even (numpy's
        ``rint``). A row of zeros has scale 0 and gives q = 0. Where ``x / scale`` is not
        finite (NaN in the row, ±inf, or a NaN/inf scale) q is 0.
    scale : numpy.ndarray or pyopencl.array.Array of float32
        Shape of ``x`` without ``axis``. ``dequantize(q, scale)`` gives ``q * scale``.
    """
    return _scale("quantize_int8", x, axis, device, queue, force)


def dequantize(q, scale, axis=-1):
    """``q * scale`` with ``scale`` broadcast along ``axis``: the inverse of :func:`quantize_int8`.

    Parameters
    ----------
    q : array_like or pyopencl.array.Array of int8
    scale : array_like or pyopencl.array.Array of float32
        Shape of ``q`` without ``axis``.
    axis : int, optional

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array of float32
        Computed on the host (an elementwise product; pyopencl input is copied back).
    """
    qa, q_dev = _as_native(q)
    sa, s_dev = _as_native(scale)
    if qa.dtype != np.int8:
        raise TypeError(f"dequantize needs int8 values, not {qa.dtype}")
    if sa.dtype.kind != "f":
        raise TypeError(f"dequantize needs float scales, not {sa.dtype}")
    ax = _axis(axis, qa.ndim, "dequantize")
    expected = qa.shape[:ax] + qa.shape[ax + 1:]
    if tuple(sa.shape) != tuple(expected):
        raise ValueError(f"dequantize: scale must have shape {expected}, not {tuple(sa.shape)}")
    qh = qa.get() if q_dev else qa
    sh = sa.get() if s_dev else sa
    res = qh.astype(np.float32) * np.expand_dims(sh.astype(np.float32), ax)
    if q_dev:
        import pyopencl.array as cla

        return cla.to_device(qa.queue, res)
    return res


# ---- scans ------------------------------------------------------------------------------------
def _scan(op, x, axis, device, queue, force):
    a, on_device = _as_native(x)
    allowed = FLOAT_DTYPES + (INT_DTYPES if op != "logcumsumexp" else ())
    if a.dtype.name not in allowed:
        kinds = "float" if op == "logcumsumexp" else "bool, integer or float"
        raise TypeError(f"{op} needs {kinds} input, not {a.dtype}")
    if axis is None:  # numpy: scan the flattened array
        a = a.reshape(-1) if on_device else np.ravel(a)
        axis = 0
    ax = _axis(axis, a.ndim, op)
    out, _, q, moved, order = _run(op, a, on_device, ax, device, queue, force)
    if out is None:
        return _empty_like(a, on_device, q, out_dtype_of(op, a.dtype.name))
    return _from_last(_host_or_device(out, on_device), on_device, order, q, moved.shape)


def cumsum(x, axis=None, *, device=None, queue=None, force: RowForce | None = None):
    """Inclusive prefix sums along an axis, with numpy's dtypes.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        bool, integer or float.
    axis : int or None, optional
        None (numpy's default) scans the flattened array.
    device, queue, force
        As for :func:`softmax` (``force.cache`` must stay None: scans cache nothing).

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Bool and signed integers give int64, unsigned integers uint64: exact, wrapping on
        overflow like numpy. Floats keep their dtype; float16 is accumulated in float32
        (numpy accumulates in float16, so ours is the more accurate of the two).

    Notes
    -----
    Float error: the sums are formed in a blocked order (per-lane runs, a team prefix, a
    running carry), never deeper than numpy's sequential one, so element ``i`` obeys the
    sequential bound ``|y_i - exact| <= (i + 1) * u * sum(|x_j|, j <= i)`` with
    ``u = 2**-24`` for float32 (tested), plus the final rounding for float16.
    """
    return _scan("cumsum", x, axis, device, queue, force)


def cumprod(x, axis=None, *, device=None, queue=None, force: RowForce | None = None):
    """Inclusive prefix products along an axis, with numpy's dtypes (see :func:`cumsum`).

    Parameters
    ----------
    x, axis, device, queue, force
        As for :func:`cumsum`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        Integers multiply in 64 bits and wrap like numpy. Float element ``i`` has relative
        error at most about ``(i + 1) * u``.
    """
    return _scan("cumprod", x, axis, device, queue, force)


def logcumsumexp(x, axis=None, *, device=None, queue=None, force: RowForce | None = None):
    """``log(cumsum(exp(x)))`` without overflow: ``numpy.logaddexp.accumulate`` along an axis.

    Parameters
    ----------
    x : array_like or pyopencl.array.Array
        float16, float32 or float64.
    axis, device, queue, force
        As for :func:`cumsum`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        dtype of ``x``. -inf elements are neutral, NaN propagates, +inf stays +inf
        (numpy's ``logaddexp``).
    """
    return _scan("logcumsumexp", x, axis, device, queue, force)
