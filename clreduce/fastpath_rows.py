"""The row ops' per-call fast path: a repeated call goes straight to a ready launcher.

The reductions' fast path (fastpath.py) explains why: a row op's full path re-validates,
converts kinds, moves the axis, re-plans and re-binds on every call -- 80-140 us of Python
on a CUDA host, where torch's own softmax costs 9-18 us and the kernel of a 100 MB row op
takes ~60 us. Here ``clreduce.rowops`` computes a *signature* of the call and looks it up
in the same bounded cache (``CLREDUCE_CACHE_SIZE`` entries, shared with the reductions,
least recently used first; ``fastpath.clear()`` and ``CLREDUCE_FAST_PATH=0`` act on both):

* the op; the array's kind, shape, strides, dtype and device (fastpath's describers; a
  torch tensor also its ``requires_grad``); ``axis`` with its type;
* ``weight`` / ``bias``: None, or their kind, shape, strides, dtype and device; ``eps``
  with its type (it is a launch argument, written once into the launcher);
* ``out=``'s kind, shape and dtype (a pair of them for two-result ops); ``backend=``;
  ``device=`` and ``queue=`` (context and device); ``force=`` (a ``RowForce``, field by
  field); the ``CLREDUCE_*`` variables calls depend on.

**Miss**: the full path runs. When the call was one the launchers replay exactly -- a
C-contiguous non-empty input reduced along its last axis (scans: also ``axis=None``), on
the backend its kind goes to, statistics that need no cast on pyopencl arrays (float16
``moments`` and ``absmax_scale``, float64 ``quantize_int8`` scales are cast after the kernel:
the CUDA and numpy launchers cast them as the full path does; pyopencl ones, which the full
path casts through the host, take the full path),
weights of a kind the launcher can bind (OpenCL: numpy or pyopencl; CUDA: the input's own
kind, on its device) -- a launcher is built (``opencl_rowops.fast_launcher``,
``cuda/row_fast.py``), run once on the same input, and kept only when its result equals
the full path's bit for bit (else a ``RuntimeWarning``, and the signature keeps the full
path). ``dequantize`` (an elementwise product, no kernel of ours) always takes the full path.

**Hit**: the launcher allocates the outputs, binds the input, weight and bias and launches
the plan's passes; ``out=`` is then written (and checked) by the full path's own writer. The
rows go straight into ``out=`` where ``backends/out_dest.py`` allows (contiguous, apart from
the inputs), and the writer then has nothing to copy.
Every check the full path makes depends only on the signature, so bad input raises the
same errors: a call that raised never completed the full path and was never learned.

A launcher holds its plan (and kernels), never a caller's array, queue or context (except
the process-lifetime default and per-device queues); whatever drops plans on OpenCL drops
it too (``fastpath.discard_plans``: a released context, an evicted program, a sub-group
mode marked bad, ``opencl_rowops.clear_caches``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from . import config, fastpath
from .plan_rowops import RowForce, RowProblem, acc_dtype_of

_TWO_RESULTS = ("moments", "absmax_scale", "quantize_int8")
_SCANS = ("cumsum", "cumprod", "logcumsumexp")
_ROW_FORCE_FIELDS = tuple(field.name for field in dataclasses.fields(RowForce))
_describe_torch = fastpath._describe_torch


def _part(a):
    """An array argument (weight, bias) as a key part: None, or its description."""
    if a is None:
        return None
    describe = fastpath._DESCRIBERS.get(type(a)) or fastpath._describer(type(a))
    part = None if describe is None else describe(a)
    if part is None:
        raise fastpath._Uncacheable
    if describe is _describe_torch:
        part += (a.requires_grad,)
    return part


def _out_part(out, two: bool):
    if out is None:
        return None
    if two:
        if type(out) is not tuple or len(out) != 2:
            raise fastpath._Uncacheable  # the full path says what is wrong
        return tuple(_out_part(o, False) for o in out)
    dtype = out.dtype
    if not isinstance(dtype, np.dtype) and type(dtype).__module__ != "torch":
        raise fastpath._Uncacheable
    return type(out), tuple(out.shape), dtype


_NO_OPTIONS = (fastpath._option(None), fastpath._option(None))  # device=None, queue=None
_PLAIN = fastpath._PLAIN


def signature(op: str, x, axis, weight, bias, eps, out, backend, device, queue, force):
    """The cache key of a row-op call, or None when it cannot be cached (see the module doc).

    Runs on every call, so the common case (a known kind, no options, ``out=`` or ``force=``,
    a plain ``axis`` and ``eps``) calls no helper but the describer: ~2.2 us a call on an
    H200's host before, of a 12.3 us call."""
    describe = fastpath._DESCRIBERS.get(type(x)) or fastpath._describer(type(x))  # a known kind: no call
    if describe is None:
        return None
    env = config.call_env_and_fast_path()
    if env[-1] == fastpath._OFF:
        return None
    try:
        array = describe(x)
        if array is None:
            return None
        if describe is _describe_torch:
            array += (x.requires_grad,)
        if device is None and queue is None:
            options = _NO_OPTIONS
        else:
            options = (fastpath._option(device), fastpath._option(queue))
            if options[0] is None or options[1] is None:
                return None
        if backend is not None and type(backend) is not str:
            return None
        if force is not None:
            if type(force) is not RowForce:
                return None
            force = fastpath._typed(tuple(getattr(force, name) for name in _ROW_FORCE_FIELDS))
        params = () if weight is None and bias is None else (_part(weight), _part(bias))
        kind = type(axis)
        axis_part = (kind, axis) if kind in _PLAIN else fastpath._typed(axis)
        kind = type(eps)
        eps_part = (kind, eps) if kind in _PLAIN else fastpath._typed(eps)
        out_part = None if out is None else _out_part(out, op in _TWO_RESULTS)
        return ("rowop", op, array, axis_part, params, eps_part, out_part, backend, options, force, env)
    except Exception:  # noqa: BLE001 - an argument we cannot key: the full path says what is wrong
        return None


class RowEntry:
    """A learned row-op signature: ``launch(x, weight, bias, queue, dest)`` gives the
    result(s); the rows go into ``dest`` (the caller's ``out=``, or None) where
    ``backends/out_dest.py`` allows, else into a new array."""

    __slots__ = ("launch",)

    def __init__(self, launch):
        self.launch = launch  # a bound method: fastpath.discard_plans finds its plan through it

    def __call__(self, x, weight, bias, queue, dest=None):
        return self.launch(x, weight, bias, queue, dest)


def lookup(key) -> RowEntry | None:
    return fastpath.lookup(key)


# ---- learning -----------------------------------------------------------------------------

def _contiguous(x) -> bool:
    flags = getattr(x, "flags", None)
    if flags is not None:
        return bool(flags.c_contiguous)
    return bool(x.is_contiguous()) and not x.is_neg()  # torch; a negated view reads unnegated memory


def _launcher(op, x, axis, weight, bias, eps, backend, device, queue, force):
    """A launcher replaying this call, or None where the full path does more than launch the
    plan on the caller's array (see the module doc)."""
    from .backends import backend_for

    size = math.prod(x.shape)  # torch's .size is a method
    if x.ndim == 0 or size == 0 or not _contiguous(x):
        return None
    if axis is None and op in _SCANS:
        rows, k, rows_shape = 1, size, (size,)
    elif axis in (-1, x.ndim - 1) and type(axis) is int:
        rows, k, rows_shape = size // x.shape[-1], x.shape[-1], tuple(x.shape)
    else:
        return None
    dtype = np.dtype(str(x.dtype).replace("torch.", ""))
    stats_dtype = None  # set: the statistics' dtype differs from the kernel's, the launcher casts
    if op in _TWO_RESULTS:
        want = np.dtype(np.float32 if op == "quantize_int8" else dtype)
        if np.dtype(acc_dtype_of(op, dtype.name)) != want:
            stats_dtype = want
    from .rowops import params_are_half

    problem = RowProblem(op=op, rows=rows, row_len=k, dtype=dtype.name, weight=weight is not None,
                         bias=bias is not None,
                         params_half=params_are_half(dtype, [p for p in (weight, bias) if p is not None]))
    chosen = backend_for(x, backend, config.default_backend())
    module = type(x).__module__.partition(".")[0]
    stats_shape = tuple(x.shape[:-1])
    if chosen.name == "cuda":
        if module not in ("cupy", "torch") or device is not None or queue is not None:
            return None
        for p in (weight, bias):
            if p is not None and (type(p) is not type(x) or not _same_cuda_device(p, x) or
                                  (module == "torch" and p.is_neg())):
                return None
        from .backends.cuda.row_fast import fast_launcher

        return fast_launcher(x, problem, force, eps, rows_shape, stats_shape, stats_dtype)
    if chosen.name != "opencl" or module not in ("numpy", "pyopencl") or (stats_dtype is not None and
                                                                         module != "numpy"):
        return None
    for p in (weight, bias):
        if p is not None and type(p).__module__.partition(".")[0] not in ("numpy", "pyopencl"):
            return None
    from .backends import cl_host, opencl, opencl_rowops

    if module == "numpy":
        q = opencl.queue_for(device, queue)
        limit = cl_host.alloc_limit(q.device) - cl_host.PAGE - cl_host.SIZE_MULTIPLE
        if x.nbytes > limit:
            return None
        kind, per_call_queue = "host", queue is not None
    else:
        if queue is not None and queue.context != x.context:
            return None
        q, kind, per_call_queue = queue or x.queue, "opencl", True
    return opencl_rowops.fast_launcher(q, per_call_queue, problem, force, eps, kind, rows_shape, stats_shape,
                                       stats_dtype)


def _same_cuda_device(p, x) -> bool:
    if type(x).__module__.startswith("torch"):
        return p.is_cuda and p.device == x.device
    return p.device.id == x.device.id


def learn(key, op: str, x, axis, weight, bias, eps, backend, device, queue, force, expected) -> None:
    """Store a launcher for ``key`` when the call (whose full-path result is ``expected``)
    is one it replays, and its first run on ``x`` gives ``expected`` bit for bit. Never
    fails the call: a launcher that cannot be built leaves the signature on the full path."""
    try:
        launch = _launcher(op, x, axis, weight, bias, eps, backend, device, queue, force)
        if launch is None:
            return
        got = launch(x, weight, bias, queue)
        pairs = tuple(zip(got, expected)) if op in _TWO_RESULTS else ((got, expected),)
        same = all(_same(a, b) for a, b in pairs)
    except Exception:  # noqa: BLE001 - a launcher we cannot build or run is a slow call, not an error
        return
    if not same:
        warnings.warn(f"clreduce's row-op fast path answered differently from the full path for {op} of "
                      f"{type(x).__name__} {tuple(x.shape)} {x.dtype} (a bug: please report it); these calls keep "
                      "the full path", RuntimeWarning, stacklevel=3)
        return
    try:
        fastpath._cache.put(key, RowEntry(launch))
    except TypeError:  # an unhashable key part slipped through (see fastpath.lookup)
        pass


def _host(a) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    module = type(a).__module__.partition(".")[0]
    if module == "torch":
        return a.detach().cpu().numpy()
    return to_numpy(a)


def to_numpy(a) -> np.ndarray:
    """A numpy copy of a backend array: pyopencl's through ``cl_transfer.to_host`` (which
    waits for the copy itself: its module doc names the driver bug), cupy's with ``get``
    (which synchronises its stream). Imports pyopencl only for a pyopencl array."""
    if type(a).__module__.startswith("pyopencl"):
        from .backends.cl_transfer import to_host

        return to_host(a)
    return a.get()


def _same(got, want) -> bool:
    """Same kind, shape and dtype, and equal bit for bit (NaN where NaN)."""
    if type(got) is not type(want):
        return False
    if type(got).__module__.startswith("torch"):
        import torch

        torch.cuda.synchronize(got.device)  # the full path may have run on another stream
    have, need = _host(got), _host(want)
    return have.dtype == need.dtype and have.shape == need.shape and \
        bool(np.array_equal(have, need, equal_nan=have.dtype.kind == "f"))
