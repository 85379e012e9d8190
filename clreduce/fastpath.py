"""The per-call fast path: a repeated call goes straight to a ready launcher.

A public reduction first validates its arguments, resolves numpy's dtype rules, lays the
input out, plans, builds or looks up kernels, wraps buffers and only then launches: about
400 us per call on a CPU OpenCL device, 60-110 us through CuPy, for a kernel that runs in
a few microseconds on a tiny array. Most programs repeat the same call. So ``api._reduce``
computes a *signature* of the call -- the array's kind, shape, strides, dtype and
device/context; the op; ``axis``, ``keepdims``, ``dtype=``, ``ddof``, ``force=``,
``backend=``; ``out=``'s kind, shape and dtype; the backend options (queue, device); the
CLREDUCE_* variables a plan depends on and the tune state -- and looks it up here.

* **Miss**: the call runs the ordinary (slow) path with a :class:`Trace` attached. When the
  trace shows the call was exactly one in-place launch whose device result went back to
  the caller unchanged (only reshaped), the backend builds a launcher for that signature
  and it is stored. Anything else (host-side post-processing, casts, copies, chunking,
  empty reductions, warnings) stays on the slow path every time.
* **Hit**: the launcher runs the kernels on the new array and returns the result; nothing
  is re-validated: the signature equals one that passed validation, and every check the
  slow path makes is a function of the signature (``out=`` is still written by the
  backend's ``write_out``, with its own checks, on every call).

Values that compare equal but mean different things (``axis=True`` vs ``axis=1``,
``keepdims=1.0`` vs ``True``) are keyed with their types. Unhashable or unknown arguments
(a ``force`` dict, a stream object, a list for ``axis``) make a call uncacheable: it takes
the slow path.

The cache is a bounded LRU (``CLREDUCE_CACHE_SIZE`` entries, default 256). An entry holds
no context, queue, kernel or array: it keeps the key of the backend's plan cache entry and
checks on every hit that the same plan is still there (a plan dropped because a context
was released, a program evicted, a sub-group mode marked bad or the caches cleared makes
the entry stale: that call takes the slow path and learns again).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import config, tuning
from .lru import LRU
from .plan import Force

_OFF = config.FAST_PATH_OFF  # CLREDUCE_FAST_PATH's raw value that turns the fast path off

# The result of a launcher whose plan is gone: take the slow path (which learns again).
STALE = object()

_cache = LRU(config.cache_size)


class Trace:
    """What the slow path did for one call (filled by ``api``), to decide whether the
    call can be replayed by a launcher."""

    __slots__ = ("chosen", "native", "force", "runs", "delivered", "refused")

    def __init__(self):
        self.chosen = self.native = self.force = self.delivered = None
        self.runs: list[list] = []  # [in_place, problem, device result]
        self.refused = False


class Entry:
    """A learned signature: the backend's launcher and how its result reaches the caller."""

    __slots__ = ("launch", "chosen", "scalar")

    def __init__(self, launch, chosen, scalar: bool):
        self.launch, self.chosen, self.scalar = launch, chosen, scalar

    def __call__(self, a, out, where):
        result = self.launch(a, where)
        if result is STALE:
            return STALE
        if out is not None:
            self.chosen.write_out(out, result)
            return out
        return result[()] if self.scalar else result


# ---- signatures ---------------------------------------------------------------------------

# Key parts are built only from values whose hash and == are C code (str, int, float,
# bytes, None, types, numpy and torch dtypes, tuples of these), so the cache can be read
# without a lock (LRU.get_unlocked). Anything else makes the call uncacheable.
_PLAIN = frozenset((type(None), bool, int, float, str, np.bool_, np.int8, np.int16, np.int32, np.int64,
                    np.uint8, np.uint16, np.uint32, np.uint64))


class _Uncacheable(Exception):
    pass


def _typed(value):
    """``value`` with its type, recursively through tuples: 1, True and 1.0 hash alike."""
    kind = type(value)
    if kind is tuple:
        return tuple, tuple(_typed(v) for v in value)
    if kind in _PLAIN:
        return kind, value
    raise _Uncacheable


def _dtype_arg(value):
    """``dtype=`` as a key part: None, a string, a type (np.float32, float) or a numpy dtype."""
    if value is None or type(value) is str or isinstance(value, (type, np.dtype)):
        return type(value), value
    raise _Uncacheable


def _describe_numpy(a):
    dtype = a.dtype
    # a non-native byte order is converted by the backend (a copy): the slow path's business
    return (np.ndarray, a.shape, a.strides, dtype) if dtype.isnative else None


def _describe_pyopencl(a):
    queue = a.queue
    if queue is None:
        return None
    return type(a), a.shape, a.strides, a.dtype, a.context.int_ptr, queue.device.int_ptr


def _describe_cupy(a):
    # the memory pointer's device id: ``a.device`` builds a Device object on every call
    device = getattr(getattr(a, "data", None), "device_id", None)
    return type(a), a.shape, a.strides, a.dtype, a.device.id if device is None else device


def _describe_torch(t):
    if not t.is_cuda:
        return None  # a CPU tensor is converted to numpy first: slow path
    # is_neg: a negated view exports its unnegated memory (the slow path's DLPack refuses it)
    return type(t), t.shape, t.stride(), t.dtype, t.get_device(), t.is_neg()


_DESCRIBERS = {np.ndarray: _describe_numpy}
_KINDS = {("pyopencl", "Array"): _describe_pyopencl, ("cupy", "ndarray"): _describe_cupy,
          ("torch", "Tensor"): _describe_torch}


def _describer(kind: type):
    describe = _DESCRIBERS.get(kind)
    if describe is None:
        # exact types only (subclasses such as np.matrix or torch Parameters: slow path);
        # asking by module name imports no GPU library
        describe = _KINDS.get((kind.__module__.partition(".")[0], kind.__name__))
        if describe is not None:
            _DESCRIBERS[kind] = describe
    return describe


def _option(value):
    """A backend option (queue=, device=, stream=) as a key part, or None: uncacheable."""
    if value is None or type(value) in (int, str):
        return type(value), value
    kind = type(value)
    if kind.__module__.partition(".")[0] == "pyopencl":
        if kind.__name__ == "CommandQueue":
            # the queue itself is used per call; the key holds only what decisions depend on
            return kind, value.context.int_ptr, value.device.int_ptr
        if kind.__name__ == "Device":
            return kind, value.int_ptr
    return None


_FORCE_FIELDS = tuple(field.name for field in dataclasses.fields(Force))  # every knob, lanes/unroll/split too


def signature(public: str, op_name: str, a, axis, dtype, out, keepdims, ddof, single_axis, backend, force,
              where: dict):
    """The cache key of a call, or None when the call cannot be cached.

    Runs on every call, so it is written for the common case (plain ``axis``, ``keepdims``
    and ``ddof``; no ``out=``, options or ``force``): one read of the environment, no
    helper call per argument, and no trial ``hash`` -- every part is built from types whose
    hash cannot fail (see _PLAIN), and ``lookup`` / ``learn`` treat a key that does as
    uncacheable anyway.
    """
    describe = _DESCRIBERS.get(type(a)) or _describer(type(a))  # a known kind: no call
    if describe is None:
        return None
    env = config.call_env_and_fast_path()
    if env[-1] == _OFF:
        return None
    try:
        array = describe(a)
        if array is None:
            return None
        out_part = None
        if out is not None:
            out_dtype = out.dtype
            if not isinstance(out_dtype, np.dtype) and type(out_dtype).__module__ != "torch":
                return None
            out_part = type(out), tuple(out.shape), out_dtype
        options = ()
        if where:
            options = tuple(sorted((name, _option(value)) for name, value in where.items()))
            if any(part is None for _, part in options):
                return None
        if force is not None:
            if type(force) is not Force:
                return None  # a force dict is built into a Force per call by the slow path
            force = _typed(tuple(getattr(force, name) for name in _FORCE_FIELDS))
        if backend is not None and type(backend) is not str:
            return None
        kind = type(axis)
        axis_part = (kind, axis) if kind in _PLAIN else _typed(axis)
        kind = type(keepdims)
        keepdims_part = (kind, keepdims) if kind in _PLAIN else _typed(keepdims)
        kind = type(ddof)
        ddof_part = (kind, ddof) if kind in _PLAIN else _typed(ddof)
        dtype_part = (None, None) if dtype is None else _dtype_arg(dtype)
        return (public, op_name, array, axis_part, dtype_part, out_part, keepdims_part, ddof_part, single_axis,
                backend, force, options, env, tuning.state())
    except Exception:  # noqa: BLE001 - no shape/dtype, a driver error: the slow path says why
        return None


# ---- the cache ----------------------------------------------------------------------------

def lookup(key) -> Entry | None:
    try:
        return _cache.get_unlocked(key)  # keys are C-comparable (see _PLAIN)
    except TypeError:  # an unhashable part slipped through: the call is just not cacheable
        return None


def learn(key, trace: Trace, a, out, where: dict) -> None:
    """Store a launcher for ``key`` when ``trace`` shows one in-place launch whose result
    reached the caller unchanged. Never fails the call: a launcher that cannot be built
    leaves the signature on the slow path."""
    if trace.refused or len(trace.runs) != 1 or trace.delivered is None:
        return
    flags = getattr(a, "flags", None)
    if flags is not None and not flags.c_contiguous:
        return  # a transposed input read in place (cl_host.base_order): the launchers wrap C order only
    in_place, problem, raw = trace.runs[0]
    final = trace.delivered
    if not in_place or raw is None or final.dtype != raw.dtype or final.size != raw.size:
        return
    address = _address(final)
    if address is None or address != _address(raw):
        return  # post-processed on the host (a cast, a divide, a copy)
    make = getattr(trace.chosen, "fast_launcher", None)
    if make is None:
        return
    try:
        launch = make(a, trace.native, problem, trace.force, tuple(final.shape), where, final)
    except Exception:  # noqa: BLE001 - a launcher we cannot build is a slow call, not an error
        return
    if launch is not None:
        scalar = out is None and isinstance(final, np.ndarray) and final.ndim == 0
        try:
            _cache.put(key, Entry(launch, trace.chosen, scalar))
        except TypeError:  # unhashable (see lookup)
            pass


def _address(array):
    """Where an array's data starts (numpy, pyopencl, CUDA arrays), or None."""
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    base = getattr(array, "base_data", None)
    if base is not None:
        return id(base), array.offset
    cuda = getattr(array, "__cuda_array_interface__", None)
    return None if cuda is None else cuda["data"][0]


def discard_plans(predicate) -> int:
    """Drop entries whose launcher holds a plan cache entry ``(key, value)`` matching
    ``predicate`` (the OpenCL backend calls this wherever it drops plans)."""
    def matches(_key, entry):
        launcher = getattr(entry.launch, "__self__", None)
        held = getattr(launcher, "plan_entry", None)
        return held is not None and predicate(launcher.plan_key, held)

    return _cache.discard_if(matches)


def forget(key, entry: Entry) -> None:
    """Drop ``entry`` (stale) so the next call with ``key`` learns again."""
    _cache.discard_if(lambda k, v: v is entry)


def clear() -> None:
    """Forget every learned signature (``opencl.clear_caches()`` calls this)."""
    _cache.clear()


def size() -> int:
    return len(_cache)
