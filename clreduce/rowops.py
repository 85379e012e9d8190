"""Fused row operations: softmax, log_softmax, rms_norm, layer_norm, moments, absmax_scale,
quantize_int8, dequantize, cumsum, cumprod, logcumsumexp.

Each op reduces a row to one or two statistics and (except ``moments``) writes the row
back transformed (``clreduce/plan_rowops.py`` picks the variant). Inputs are taken like the
reductions take them: numpy arrays (and anything ``numpy.asarray`` accepts) and pyopencl
arrays run on OpenCL; cupy arrays and CUDA torch tensors run on the CUDA backend where they
live (``backend="cuda"`` sends numpy input there too). Results come back as the input's
kind; ``out=`` writes them into a caller's array of that kind. Math runs in float32
(float64 for float64 input); float16 is only storage. A repeated call with the same
signature takes the per-call fast path (clreduce/fastpath_rows.py).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import fastpath_rows
from .api import normalize_axis
from .fastpath_rows import to_numpy
from .plan_rowops import FLOAT_DTYPES, INT_DTYPES, RowForce, RowProblem, out_dtype_of

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

__all__ = ["softmax", "log_softmax", "rms_norm", "layer_norm", "moments", "absmax_scale", "quantize_int8",
           "dequantize", "cumsum", "cumprod", "logcumsumexp"]


# ---- inputs: which backend, in which kind ----------------------------------------------------
class _Input:
    """The caller's array as the backend takes it.

    ``kind``: "host" (numpy, run on OpenCL), "opencl" (a pyopencl array, stays there) or
    "cuda" (a cupy array; ``back`` turns results into the caller's kind: numpy, cupy or a
    torch tensor, on the caller's device).
    """

    __slots__ = ("array", "kind", "back")

    def __init__(self, x, backend):
        from . import config
        from .backends import backend_for

        chosen = backend_for(x, backend, config.default_backend())
        if chosen.name == "cuda":
            self.array, self.back = chosen.to_native(x)
            self.kind = "cuda"
        elif type(x).__module__.startswith("pyopencl") and hasattr(x, "base_data"):
            self.array, self.kind, self.back = x, "opencl", _same
        else:
            a = np.asarray(x)
            if not a.dtype.isnative:
                a = a.astype(a.dtype.newbyteorder("="))
            self.array, self.kind, self.back = a, "host", _same


def _same(result):
    return result


def _float_input(x, op: str, backend):
    inp = _Input(x, backend)
    if inp.array.dtype.name not in FLOAT_DTYPES:
        raise TypeError(f"{op} needs float16, float32 or float64 input, not {inp.array.dtype} "
                        "(no silent cast: convert with .astype(numpy.float32))")
    return inp


def _axis(axis, ndim: int, op: str) -> int:
    """The one axis a row op takes, made non-negative: api.normalize_axis's checks and numpy's
    errors (AxisError, a TypeError for a bool or a non-integer), with the op named in a
    TypeError; None and sequences of axes are refused."""
    if axis is None or isinstance(axis, (tuple, list)):
        raise TypeError(f"{op} takes one axis (an int), not {axis!r}")
    try:
        (ax,) = normalize_axis(axis, ndim, single=True)
    except TypeError as exc:  # normalize_axis's text also offers tuples and None: not here
        what = exc if isinstance(axis, (bool, np.bool_)) else f"axis must be an int, not {type(axis).__name__}"
        raise TypeError(f"{op}: {what}") from None
    return ax


def _eps(eps, op: str) -> float:
    # float("1e-5") and float(True) succeed: a string or a bool is a mistake, not an epsilon
    # (both ran silently until 2026-11-27)
    if isinstance(eps, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{op}: eps must be a real number, not {type(eps).__name__}")
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: eps must be a real number, not {type(eps).__name__}") from None
    except OverflowError:  # a Python int past float64 (10**400): not finite
        raise ValueError(f"{op}: eps must be a finite number > 0, not {eps!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{op}: eps must be a finite number > 0, not {eps!r}")
    return value


_SMALLEST_NORMAL = {name: float(np.finfo(name).tiny) for name in ("float32", "float64")}
_LARGEST = {name: float(np.finfo(name).max) for name in ("float32", "float64")}


def _eps_for(eps: float, dtype, op: str) -> None:
    """An eps the norm's math type holds as a normal number: float64 for float64 input, else
    float32. A smaller one would be 0 there (1e-50 in float32), or flushed to 0 where a device
    or the CUDA backend's float16 kernels flush subnormals, and rows of zeros would give NaN
    (an outside fuzz run, 2026-11-29: ``rms_norm(zeros, eps=1e-50)``)."""
    math = "float64" if str(dtype).endswith("float64") else "float32"
    tiny = _SMALLEST_NORMAL[math]
    if eps < tiny:
        raise ValueError(f"{op}: eps={eps!r} is below the smallest normal {math} ({tiny:.4g}), "
                         f"the type of the norm's math for {dtype} input: it would round or flush to 0 there")
    if eps > _LARGEST[math]:
        # 1e39 became inf in float32 and every row 0 (an outside fuzz run, 2026-11-30)
        raise ValueError(f"{op}: eps={eps!r} is above the largest {math} ({_LARGEST[math]:.4g}), the type of the "
                         f"norm's math for {dtype} input: it would be inf there")


def _row_param(p, name: str, k: int, op: str, inp: _Input):
    """weight / bias: None, or a float array of shape (K,) (K = the last axis), as the
    input's backend reads it: numpy or pyopencl for OpenCL, cupy for CUDA."""
    if p is None:
        return None
    if inp.kind == "cuda":
        from .backends.cuda.rowops import as_cupy

        a = as_cupy(p)
    elif type(p).__module__.startswith("pyopencl") and hasattr(p, "base_data"):
        a = p
    else:
        a = np.asarray(p)
    if a.dtype.name not in FLOAT_DTYPES:
        raise TypeError(f"{op}: {name} must be a float array, not {a.dtype}")
    if tuple(a.shape) != (k,):
        raise ValueError(f"{op}: {name} must have the shape of the last axis ({k},), not {tuple(a.shape)}")
    return a


# ---- running ----------------------------------------------------------------------------------
def _queue(a, device, queue):
    """The OpenCL queue of a host or pyopencl input, by the reductions' rules (a pyopencl array
    runs where it lives: OpenCLBackend.queue_for_array)."""
    from .backends import get_backend
    from .backends.opencl import check_queue

    check_queue(queue)
    return get_backend("opencl").queue_for_array(a, queue, device)


def _to_last(inp: _Input, ax: int, queue):
    """A C-contiguous copy (or the array itself) with axis ``ax`` last, as (rows, K)."""
    a = inp.array
    order = [i for i in range(a.ndim) if i != ax] + [ax]
    if inp.kind == "opencl":
        from .backends.opencl import gather

        moved = a if ax == a.ndim - 1 and a.flags.c_contiguous else gather(queue, a, order)
    elif inp.kind == "cuda":
        import cupy

        moved = cupy.ascontiguousarray(a.transpose(order))
    else:
        moved = np.ascontiguousarray(a.transpose(order))
    return moved, order


def _from_last(res, inp: _Input, order: list[int], queue, moved_shape):
    """Undo ``_to_last`` for a result shaped like the moved array (in the backend's kind)."""
    res = res.reshape(moved_shape)
    if order == sorted(order):
        return res
    inverse = [int(i) for i in np.argsort(order)]
    if inp.kind == "opencl":
        from .backends.opencl import gather

        return gather(queue, res, inverse)
    if inp.kind == "cuda":
        import cupy

        return cupy.ascontiguousarray(res.transpose(inverse))
    return np.ascontiguousarray(res.transpose(inverse))


class _Run:
    """One op's launch: results in the backend's kind (pyopencl or cupy arrays)."""

    def __init__(self, op: str, inp: _Input, ax: int, device, queue, force, **kwargs):
        a = inp.array
        self.inp, self.q = inp, None
        if inp.kind != "cuda":
            self.q = _queue(a, device, queue)
        elif device is not None or queue is not None:
            raise TypeError("device= and queue= choose an OpenCL device; a CUDA array runs where it lives")
        self.moved, self.order = _to_last(inp, ax, self.q)
        k = self.moved.shape[-1]
        rows = math.prod(self.moved.shape[:-1])
        self.out = self.stats = None
        self.empty = rows == 0 or k == 0
        if self.empty:
            return
        params = [p for p in (kwargs.get("weight"), kwargs.get("bias")) if p is not None]
        problem = RowProblem(op=op, rows=rows, row_len=k, dtype=a.dtype.name,
                             weight=kwargs.get("weight") is not None, bias=kwargs.get("bias") is not None,
                             params_half=params_are_half(a.dtype, params))
        if inp.kind == "cuda":
            from .backends.cuda import rowops as cuda_rowops

            self.out, self.stats = cuda_rowops.run(problem, self.moved.reshape(rows, k), force=force, **kwargs)
        else:
            from .backends import opencl_rowops

            self.out, self.stats = opencl_rowops.run(self.q, problem, self.moved, force=force, **kwargs)

    def rows(self):
        """The transformed rows in the input's layout, as the caller's kind."""
        if self.inp.kind == "host":
            return _from_last(to_numpy(self.out), self.inp, self.order, None, self.moved.shape)
        return self.inp.back(_from_last(self.out, self.inp, self.order, self.q, self.moved.shape))

    def deliver(self, result):
        """A backend array (pyopencl / cupy) as the caller's kind."""
        if self.inp.kind == "host":
            return to_numpy(result)
        return self.inp.back(result)

    def empty_array(self, shape, dtype, fill=None):
        """An array of the caller's kind (``fill``: its value, else uninitialised)."""
        dtype = np.dtype(dtype)
        host = np.empty(shape, dtype) if fill is None else np.full(shape, fill, dtype)
        if self.inp.kind == "host":
            return host
        if self.inp.kind == "cuda":
            return self.inp.back(host)  # the converter puts host values on the caller's device
        from .backends.cl_transfer import to_device

        return to_device(self.q, host)

    def cast(self, res, dtype):
        """``res`` (backend kind) as ``dtype``. pyopencl has no float16 arithmetic type, so a
        float16 result of an OpenCL run is cast on the host and sent back."""
        dtype = np.dtype(dtype)
        if res.dtype == dtype:
            return res
        if self.inp.kind != "cuda" and dtype == np.float16:
            from .backends.cl_transfer import to_device

            with np.errstate(over="ignore"):  # beyond 65504 the float16 result is inf, as numpy's
                return to_device(res.queue, to_numpy(res).astype(dtype))
        return res.astype(dtype)


# ---- out= ---------------------------------------------------------------------------------------
def _kind_of(x) -> str:
    module = type(x).__module__.split(".")[0]
    if isinstance(x, np.ndarray):
        return "numpy"
    if module == "torch":
        return f"torch:{x.device}"
    if module == "cupy":
        return f"cupy:{x.device.id}"
    if module == "pyopencl":
        return "pyopencl"
    return type(x).__name__


def _check_out(out, result, op: str, what: str = "out") -> None:
    """``out`` must be the same kind of array on the same device as ``result`` (numpy for
    numpy input, pyopencl, cupy or torch for those), with its shape and dtype exactly: a row
    op casts nothing silently."""
    if _kind_of(out) != _kind_of(result):
        raise TypeError(f"{op}: {what}= must be a {_kind_of(result)} array like the result, not {_kind_of(out)}")
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"{op}: {what}= has shape {tuple(out.shape)}, the result {tuple(result.shape)}")
    if out.dtype != result.dtype:
        raise TypeError(f"{op}: {what}= has dtype {out.dtype}, the result {result.dtype} (no silent cast)")
    if _kind_of(out) == "pyopencl" and not out.flags.c_contiguous:
        # as the reductions' out= (pyopencl copies only between arrays of equal strides)
        raise ValueError(f"{op}: {what}= must be a C-contiguous pyopencl array")
    if _kind_of(out) == "pyopencl" and out.context != result.context:
        # as the reductions' out=; the copy had raised pyopencl's LogicError (an outside fuzz run)
        raise ValueError(f"{op}: {what}= lives in another OpenCL context than the input")


def _write_out(out, result, op: str, what: str = "out"):
    """Copy ``result`` (the caller's kind) into ``out`` (checked by ``_check_out``) and
    return ``out``; no ``out``: ``result``."""
    if out is None or result is out:  # None, or the launcher wrote the rows into out (out_dest.py)
        return result
    _check_out(out, result, op, what)
    kind = _kind_of(out)
    if kind.startswith("torch"):
        out.copy_(result)
    elif kind == "pyopencl":
        from .backends.opencl import copy_into  # ordered behind the kernels on any queue

        copy_into(out, result)
    else:
        out[...] = result
    return out


def _write_outs(out, results, op: str, check_only: bool = False):
    """``out=`` of a two-result op: None or a pair (each None or an array)."""
    if out is None:
        return results
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{op} returns two arrays: out= must be a tuple of two (each an array or None), "
                        f"not {type(out).__name__}")
    if check_only:
        for i, (o, r) in enumerate(zip(out, results)):
            if o is not None:
                _check_out(o, r, op, f"out[{i}]")
        return results
    return tuple(r if o is None else _write_out(o, r, op, f"out[{i}]") for i, (o, r) in enumerate(zip(out, results)))


# ---- every op's call: the fast path (fastpath_rows.py), else the full path ----------------------
_ROW_FORCE_KEYS = tuple(field.name for field in dataclasses.fields(RowForce))


def _row_force(op: str, force) -> RowForce | None:
    """``force=`` as a RowForce: one, a dict of its fields (as the reductions take a dict of
    Force's), or None; anything else is a TypeError naming the op."""
    if force is None or isinstance(force, RowForce):
        return force
    if isinstance(force, dict):
        unknown = [key for key in force if key not in _ROW_FORCE_KEYS]
        if unknown:
            raise TypeError(f"clreduce.{op}: unknown force key(s) {', '.join(map(repr, unknown))}; "
                            f"a row op's force takes {', '.join(_ROW_FORCE_KEYS)}")
        return RowForce(**force)
    raise TypeError(f"clreduce.{op}: force must be a clreduce.RowForce, a dict of its fields or None, "
                    f"not {type(force).__name__}")


def _call(op, x, axis, out, backend, device, queue, force, weight=None, bias=None, eps=None):
    """Every public row op (but dequantize): a learned signature runs its launcher; any other
    call runs the op's full path (``_FULL``) and may be learned (clreduce/fastpath_rows.py)."""
    if force is not None:
        force = _row_force(op, force)
    key = fastpath_rows.signature(op, x, axis, weight, bias, eps, out, backend, device, queue, force)
    if key is not None:
        entry = fastpath_rows.lookup(key)
        if entry is not None:
            if out is None:  # the common call: nothing to write into (~0.3 us of calls saved a call)
                return entry.launch(x, weight, bias, queue, None)
            return _deliver(op, entry(x, weight, bias, queue, _row_dest(op, out)), out)
    result = _FULL[op](op, x, axis, out, backend, device, queue, force, weight, bias, eps)
    if key is not None:
        _deliver(op, result, out, check_only=True)  # a call with a bad out= is never learned
        fastpath_rows.learn(key, op, x, axis, weight, bias, eps, backend, device, queue, force, result)
    return _deliver(op, result, out)


def _row_dest(op: str, out):
    """The array in ``out=`` that may receive the rows themselves (backends/out_dest.py), not
    the statistics; None for ``moments`` and where there is none."""
    if out is None or op == "moments":
        return None
    if op in _TWO_RESULTS:
        return out[0] if type(out) is tuple and len(out) == 2 else None
    return out


def _deliver(op, result, out, check_only: bool = False):
    """``result`` written into ``out=`` (checked: TypeError / ValueError), or as it is."""
    if op in _TWO_RESULTS:
        return _write_outs(out, result, op, check_only)
    if out is not None and check_only:
        _check_out(out, result, op)
        return result
    return _write_out(out, result, op)


# ---- public functions -------------------------------------------------------------------------
def _torch_direct(op, x, axis, out, backend, device, queue, force, **params):
    """A CUDA torch tensor's row op without DLPack (backends/cuda/rowops.torch_rows), or None;
    into ``out=`` itself where it is a tensor like the result that out_dest.torch_dest allows."""
    if device is not None or queue is not None or backend not in (None, "cuda") or type(x).__module__ != "torch":
        return None
    from .backends.cuda import rowops as cuda_rowops

    return cuda_rowops.torch_rows(op, x, axis, force=force, dest=out, **params)


def _softmax(op, x, axis, out, backend, device, queue, force, weight=None, bias=None, eps=None):
    direct = _torch_direct(op, x, axis, out, backend, device, queue, force)
    if direct is not None:
        return direct
    inp = _float_input(x, op, backend)
    ax = _axis(axis, inp.array.ndim, op)
    run = _Run(op, inp, ax, device, queue, force)
    return run.empty_array(inp.array.shape, inp.array.dtype) if run.empty else run.rows()


def softmax(x, axis=-1, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Softmax along one axis: ``exp(x - max) / sum(exp(x - max))``.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64. float16 is read and written as half, computed in float32.
    axis : int, optional
        The axis to normalise (default the last).
    out : array, optional
        Where to write the result: an array of the result's kind (numpy for numpy input,
        else the input's kind and device), shape and dtype. Returned.
    backend : {"opencl", "cuda"}, optional
        Default: ``CLREDUCE_BACKEND``, else the array's kind (CUDA arrays -> cuda), else opencl.
    device : pyopencl.Device or str, optional
        The OpenCL device for numpy input (default: clreduce's default device).
    queue : pyopencl.CommandQueue, optional
        OpenCL queue to run on (for pyopencl input: one of its context).
    force : RowForce or dict, optional
        Plan override (cache, sub-group mode/width, lanes, work-group size, split, vec; scans:
        lookback) for testing: a ``clreduce.RowForce`` or a dict of its fields.

    Returns
    -------
    array of the input's kind
        Same shape and dtype as ``x``.

    Notes
    -----
    Follows ``scipy.special.softmax``: the shift is the row's max, so a row holding NaN or
    +inf, and a row of only -inf, gives NaN everywhere; -inf elements of other rows give 0.

    Raises
    ------
    TypeError
        Input that is not float (no silent cast), a tuple axis, an ``out=`` of another kind
        or dtype.
    ValueError
        An ``out=`` of another shape.
    numpy.exceptions.AxisError
        ``axis`` out of range (including any axis of a 0-d input).
    """
    return _call("softmax", x, axis, out, backend, device, queue, force)


def log_softmax(x, axis=-1, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Log of the softmax along one axis: ``(x - s) - log(sum(exp(x - s)))``.

    Parameters
    ----------
    x, axis, out, backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    array of the input's kind
        Same shape and dtype as ``x``.

    Notes
    -----
    Follows ``scipy.special.log_softmax``: ``s`` is the row's max when finite, else 0. A
    row with NaN gives NaN; a row of only -inf gives NaN; a row holding +inf gives NaN at
    the +inf elements and -inf elsewhere.
    """
    return _call("log_softmax", x, axis, out, backend, device, queue, force)


def _norm(op, x, axis, out, backend, device, queue, force, weight, bias, eps):
    eps = _eps(eps, op)
    has_dtype = hasattr(x, "dtype")
    if has_dtype:  # before the torch path; other inputs once converted
        _eps_for(eps, x.dtype, op)
    direct = _torch_direct(op, x, -1, out, backend, device, queue, force, weight=weight, bias=bias, eps=eps)
    if direct is not None:
        return direct
    inp = _float_input(x, op, backend)
    a = inp.array
    if not has_dtype:
        _eps_for(eps, a.dtype, op)
    if a.ndim == 0:
        raise AxisError(-1, 0)
    k = a.shape[-1]
    w, b = _row_param(weight, "weight", k, op, inp), _row_param(bias, "bias", k, op, inp)
    if not params_are_half(a.dtype, [p for p in (w, b) if p is not None]):
        acc = np.float64 if a.dtype == np.float64 else np.float32
        w, b = _param_in_math_type(w, acc), _param_in_math_type(b, acc)
    run = _Run(op, inp, a.ndim - 1, device, queue, force, weight=w, bias=b, eps=eps)
    return run.empty_array(a.shape, a.dtype) if run.empty else run.rows()


def params_are_half(x_dtype, params) -> bool:
    """Whether a norm reads its weight / bias as float16, as they are (``RowProblem.params_half``):
    a float16 input whose given parameters are all float16 (a float16 model's own weights).
    Anything else is converted to the math type first."""
    return bool(params) and str(x_dtype).endswith("float16") and all(str(p.dtype).endswith("float16")
                                                                      for p in params)


def _param_in_math_type(p, acc):
    """weight / bias as the kernel reads them (ACC_T): numpy and cupy arrays are converted
    when uploaded; a pyopencl array of another dtype goes through the host (pyopencl has no
    float16 arithmetic to convert it on the device)."""
    if p is None or p.dtype == acc or not type(p).__module__.startswith("pyopencl"):
        return p
    return to_numpy(p).astype(acc)


def rms_norm(x, weight=None, eps=1e-6, *, out=None, backend=None, device=None, queue=None,
             force: RowForce | None = None):
    """RMS normalisation over the last axis: ``x / sqrt(mean(x**2) + eps) * weight``.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64 (float16 computed in float32).
    weight : array, optional
        Float, shape ``(x.shape[-1],)``, broadcast along every row; used in the math type.
        Numpy, or an array of the input's kind.
    eps : float, optional
        Added to the mean square; must be > 0 and a normal number of the math type (float32
        for float16 and float32 input: at least 1.18e-38).
    out, backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    array of the input's kind
        Same shape and dtype as ``x``.

    Raises
    ------
    TypeError
        Non-float ``x`` or ``weight``; ``out=`` of another kind or dtype.
    ValueError
        ``weight`` not of shape ``(x.shape[-1],)``; ``eps <= 0`` or not finite; ``out=`` of
        another shape.
    numpy.exceptions.AxisError
        0-d ``x``.
    """
    return _call("rms_norm", x, -1, out, backend, device, queue, force, weight, None, eps)


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, out=None, backend=None, device=None, queue=None,
               force: RowForce | None = None):
    """Layer normalisation over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias``.

    The statistics come from the row shifted by its first element: two passes over a row
    held in registers (its sum, then the squares of the deviations), else one pass of
    Neumaier-compensated sums, so float32 rows with a large mean stay accurate; ``var`` is
    the biased (ddof 0) variance, as in ``torch.nn.functional.layer_norm``.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64 (float16 computed in float32).
    weight, bias : array, optional
        Float, shape ``(x.shape[-1],)``, broadcast along every row.
    eps : float, optional
        Added to the variance; must be > 0 and a normal number of the math type (float32
        for float16 and float32 input: at least 1.18e-38).
    out, backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    array of the input's kind
        Same shape and dtype as ``x``.

    Raises
    ------
    TypeError, ValueError, numpy.exceptions.AxisError
        As for :func:`rms_norm`.
    """
    return _call("layer_norm", x, -1, out, backend, device, queue, force, weight, bias, eps)


def moments(x, axis=-1, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Mean and (biased, ddof 0) variance along one axis, from one pass over the data.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64.
    axis : int, optional
    out : tuple of two arrays (or None each), optional
        Where to write mean and var (kind, shape and dtype of the results).
    backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    mean, var : arrays of the input's kind
        Shape of ``x`` without ``axis``; dtype of ``x`` (computed in float32 for float16,
        as numpy's ``mean``/``var`` of float16 accumulate in float32). An empty axis gives NaN.
    """
    return _call("moments", x, axis, out, backend, device, queue, force)


def _moments(op, x, axis, out, backend, device, queue, force, weight=None, bias=None, eps=None):
    inp = _float_input(x, "moments", backend)
    a = inp.array
    ax = _axis(axis, a.ndim, "moments")
    run = _Run("moments", inp, ax, device, queue, force)
    shape = run.moved.shape[:-1]
    if run.empty:
        results = (run.empty_array(shape, a.dtype, np.nan), run.empty_array(shape, a.dtype, np.nan))
    else:
        results = tuple(run.deliver(run.cast(run.stats[i], a.dtype).reshape(shape)) for i in (0, 1))
    return results


def _scale(op, x, axis, out, backend, device, queue, force, weight=None, bias=None, eps=None):
    inp = _float_input(x, op, backend)
    a = inp.array
    ax = _axis(axis, a.ndim, op)
    run = _Run(op, inp, ax, device, queue, force)
    out_dtype = np.int8 if op == "quantize_int8" else a.dtype
    scale_dtype = np.float32 if op == "quantize_int8" else a.dtype
    shape = run.moved.shape[:-1]
    if run.empty:
        results = (run.empty_array(a.shape, out_dtype), run.empty_array(shape, scale_dtype, 0))
    else:
        results = (run.rows(), run.deliver(run.cast(run.stats, scale_dtype).reshape(shape)))
    return results


def absmax_scale(x, axis=-1, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Divide each row by its largest magnitude: ``(x / amax, amax)``, ``amax = max(|x|)``.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64.
    axis : int, optional
    out : tuple of two arrays (or None each), optional
        Where to write ``scaled`` and ``amax``.
    backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    scaled : array of the input's kind
        Shape and dtype of ``x``. A row whose ``amax`` is 0 (all zeros) gives zeros, not NaN.
        A row holding NaN gives NaN (``amax`` is NaN); one holding ±inf gives 0 at the
        finite elements and NaN at the infinite ones (IEEE ``x / inf``).
    amax : array of the input's kind
        Shape of ``x`` without ``axis``, dtype of ``x``.
    """
    return _call("absmax_scale", x, axis, out, backend, device, queue, force)


def quantize_int8(x, axis=-1, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Symmetric per-row int8 quantisation: ``q = rint(x / scale)``, ``scale = max(|x|) / 127``.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64.
    axis : int, optional
    out : tuple of two arrays (or None each), optional
        Where to write ``q`` (int8) and ``scale`` (float32).
    backend, device, queue, force
        As for :func:`softmax`.

    Returns
    -------
    q : int8 array of the input's kind
        Shape of ``x``; values in [-127, 127]. ``rint`` rounds half to even (numpy's
        ``rint``). A row of zeros has scale 0 and gives q = 0. Where ``x / scale`` is not
        finite (NaN in the row, ±inf, or a NaN/inf scale) q is 0.
    scale : float32 array of the input's kind
        Shape of ``x`` without ``axis``. ``dequantize(q, scale)`` gives ``q * scale``.
    """
    return _call("quantize_int8", x, axis, out, backend, device, queue, force)


def dequantize(q, scale, axis=-1, *, out=None, backend=None):
    """``q * scale`` with ``scale`` broadcast along ``axis``: the inverse of :func:`quantize_int8`.

    Parameters
    ----------
    q : int8 array (numpy, pyopencl, cupy or CUDA torch)
    scale : float array of the same kind
        Shape of ``q`` without ``axis``.
    axis : int, optional
    out : float32 array of the result's kind, optional
    backend : {"opencl", "cuda"}, optional
        As for :func:`softmax`.

    Returns
    -------
    float32 array of the input's kind
        An elementwise product: numpy on the host, CuPy for CUDA arrays; pyopencl input
        is computed on the host and sent back.
    """
    qi = _Input(q, backend)
    if qi.kind == "cuda":
        from .backends.cuda.rowops import as_cupy

        qa, sa = qi.array, as_cupy(scale)
    else:
        qa = qi.array
        sa = scale if type(scale).__module__.startswith("pyopencl") else np.asarray(scale)
    if qa.dtype != np.int8:
        raise TypeError(f"dequantize needs int8 values, not {qa.dtype}")
    if sa.dtype.kind != "f":
        raise TypeError(f"dequantize needs float scales, not {sa.dtype}")
    ax = _axis(axis, qa.ndim, "dequantize")
    expected = qa.shape[:ax] + qa.shape[ax + 1:]
    if tuple(sa.shape) != tuple(expected):
        raise ValueError(f"dequantize: scale must have shape {expected}, not {tuple(sa.shape)}")
    if qi.kind == "cuda":
        import cupy

        res = qi.back(qa.astype(np.float32) * cupy.expand_dims(sa.astype(np.float32), ax))
    else:
        qh = to_numpy(qa) if qi.kind == "opencl" else qa
        sh = to_numpy(sa) if type(sa).__module__.startswith("pyopencl") else sa
        res = qh.astype(np.float32) * np.expand_dims(sh.astype(np.float32), ax)
        if qi.kind == "opencl":
            from .backends.cl_transfer import to_device

            res = to_device(qa.queue, res)
    return _write_out(out, res, "dequantize")


# ---- scans ------------------------------------------------------------------------------------
def _scan(op, x, axis, out, backend, device, queue, force, weight=None, bias=None, eps=None):
    inp = _Input(x, backend)
    a = inp.array
    allowed = FLOAT_DTYPES + (INT_DTYPES if op != "logcumsumexp" else ())
    if a.dtype.name not in allowed:
        kinds = "float" if op == "logcumsumexp" else "bool, integer or float"
        raise TypeError(f"{op} needs {kinds} input, not {a.dtype}")
    if axis is None:  # numpy: scan the flattened array
        if inp.kind == "opencl":
            # pyopencl cannot reshape a transposed or strided view: a C-order copy first
            from .backends.opencl import c_order

            a = c_order(a)
        inp.array = a = a.reshape(-1) if inp.kind != "host" else np.ravel(a)
        axis = 0
    ax = _axis(axis, a.ndim, op)
    run = _Run(op, inp, ax, device, queue, force)
    return run.empty_array(a.shape, out_dtype_of(op, a.dtype.name)) if run.empty else run.rows()


def cumsum(x, axis=None, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Inclusive prefix sums along an axis, with numpy's dtypes.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        bool, integer or float.
    axis : int or None, optional
        None (numpy's default) scans the flattened array.
    out, backend, device, queue
        As for :func:`softmax`.
    force : RowForce, optional
        As for :func:`softmax` (``force.cache`` must stay None: scans cache nothing).

    Returns
    -------
    array of the input's kind
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
    return _call("cumsum", x, axis, out, backend, device, queue, force)


def cumprod(x, axis=None, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """Inclusive prefix products along an axis, with numpy's dtypes (see :func:`cumsum`).

    Parameters
    ----------
    x, axis, out, backend, device, queue, force
        As for :func:`cumsum`.

    Returns
    -------
    array of the input's kind
        Integers multiply in 64 bits and wrap like numpy. Float element ``i`` has relative
        error at most about ``(i + 1) * u``.
    """
    return _call("cumprod", x, axis, out, backend, device, queue, force)


def logcumsumexp(x, axis=None, *, out=None, backend=None, device=None, queue=None, force: RowForce | None = None):
    """``log(cumsum(exp(x)))`` without overflow: ``numpy.logaddexp.accumulate`` along an axis.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array, cupy.ndarray or CUDA torch.Tensor
        float16, float32 or float64.
    axis, out, backend, device, queue, force
        As for :func:`cumsum`.

    Returns
    -------
    array of the input's kind
        dtype of ``x``. -inf elements are neutral, NaN propagates, +inf stays +inf
        (numpy's ``logaddexp``).
    """
    return _call("logcumsumexp", x, axis, out, backend, device, queue, force)


_FULL = {"softmax": _softmax, "log_softmax": _softmax, "rms_norm": _norm, "layer_norm": _norm, "moments": _moments,
         "absmax_scale": _scale, "quantize_int8": _scale, "cumsum": _scan, "cumprod": _scan, "logcumsumexp": _scan}
_TWO_RESULTS = ("moments", "absmax_scale", "quantize_int8")
