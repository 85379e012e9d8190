"""clreduce reductions on Dask arrays: each block on its worker's device, partial states up a tree.

``clreduce.sum(darr, ...)`` (and every other public reduction) lands here when ``darr`` is a
``dask.array.Array``; the result is a lazy dask array. The graph has two layers of clreduce's
own work:

1. ``map_blocks``: every block is reduced by clreduce's public API, on the default device of
   the process that runs the task (its ``CLREDUCE_DEVICE`` / ``PYOPENCL_CTX``), into a small
   *partial state*: a numpy structured array, one record per output element, the reduced axes
   kept with length 1. Every state carries ``n``, the block's reduced element count, so an
   empty block is recognised wherever it ends up.
2. ``dask.array.reduction``: states are concatenated and merged up a tree (``split_every``)
   on the host in numpy (they are small), and the last step turns the state into numpy's
   value and dtype.

States: sum/nansum/prod/count ``s`` in the accumulator dtype (float64 for float16/float32 sums
and products: _float_block_total); mean ``(s, n)``; nanmean
``(s, c)`` with c the non-NaN count; var/std ``(n, m, M2)`` merged with Chan et al.'s formula;
argmax/argmin ``(v, i)`` with ``i`` the global index (first occurrence, first NaN, as numpy);
logsumexp the block's log-sum-exp (itself a (max, scaled sum) pair collapsed into one number,
merged max-shifted); max/min/any/all and the norms directly.

This module imports dask; ``import clreduce`` never imports it (api.py routes here by the
array's type name).
"""

from __future__ import annotations

import functools
import math
import os
import socket
import sys
import threading
import warnings
from dataclasses import dataclass

import numpy as np
import dask.array as da

from . import api
from .ops import OPS, dtype_rule
from .plan import Force

# float totals kept in float64 across blocks where the accumulator is narrower (_float_block_total)
_WIDE_TOTALS = ("sum", "nansum", "prod", "mean", "nanmean")
# public name -> the op whose dtype rule it follows, where that is another op
_RULE_OP = {"nanmean": "nansum"}
_INDEX_NONE = np.iinfo(np.int64).max  # index of an empty block: loses every tie
_EMPTY_ERROR = {
    "max": "zero-size array to reduction operation maximum which has no identity",
    "min": "zero-size array to reduction operation minimum which has no identity",
    "nanmax": "zero-size array to reduction operation fmax which has no identity",
    "nanmin": "zero-size array to reduction operation fmin which has no identity",
    "normneginf": "zero-size array to reduction operation minimum which has no identity",
    "argmax": "attempt to get argmax of an empty sequence",
    "argmin": "attempt to get argmin of an empty sequence",
}  # logsumexp of nothing: -inf (api.logsumexp), the merge of empty blocks' -inf
_NORM_KIND = {None: "norm2", 2: "norm2", 1: "norm1", np.inf: "norminf", -np.inf: "normneginf", 0: "norm0"}


def is_dask_array(a) -> bool:
    """True for a ``dask.array.Array`` (by type, so no dask import is needed to ask)."""
    return type(a).__module__.partition(".")[0] == "dask" and hasattr(a, "chunks") and hasattr(a, "dask")


@dataclass(frozen=True)
class _Spec:
    """What one block's task needs: pickled into every task of the graph."""

    op: str  # public name, or norm1/norm2/norminf/normneginf/norm0
    axes: tuple  # reduced axes of the input, sorted
    acc: str | None  # dtype= for the block's clreduce call
    state: np.dtype  # the partial state's structured dtype
    out: str  # numpy's result dtype
    ddof: float = 0.0
    call: tuple = ()  # (name, value) pairs passed to every clreduce call: backend, force, device
    total: str | None = None  # mean: where numpy's total wraps or overflows before the divide


# ---- graph construction (client side: no device is touched here) --------------------------

def reduce(name: str, a, axis=None, *, dtype=None, out=None, keepdims=False, ddof=0, ord=None,
           backend=None, force=None, where=None):
    """The dask version of clreduce's public reduction ``name`` (see its docstring)."""
    where = dict(where or {})
    split_every = where.pop("split_every", None)
    x = a
    if type(x._meta) is not np.ndarray:
        raise TypeError(f"clreduce reduces dask arrays of numpy blocks; this one holds "
                        f"{type(x._meta).__module__}.{type(x._meta).__name__} blocks")
    if out is not None and not is_dask_array(out):
        raise TypeError(f"out= for a dask array input must be a dask array, not {type(out).__name__}")
    call = _call_options(backend, force, where)
    if name not in ("argmax", "argmin"):  # those take any truthy keepdims, as numpy's
        keepdims = api._as_flag(keepdims, "keepdims")  # numpy's TypeError for "yes" or None
    if name == "norm":
        return _norm(x, ord, axis, keepdims, call, split_every, out)
    if dtype is not None and np.dtype(dtype) == np.bool_ and name in ("sum", "nansum", "prod", "mean"):
        # numpy's bool loop: a sum is any nonzero, a product all nonzero (as api does for numpy
        # input); this path had raised ops.py's internal TypeError (an outside fuzz run, 2026-11-30)
        if name == "mean" or (name == "nansum" and x.dtype.kind == "f"):
            raise TypeError(f"clreduce.{name} of a dask array with dtype=bool is not supported "
                            "(numpy's bool loop); reduce with any/all, or reduce numpy input")
        return reduce("all" if name == "prod" else "any", a, axis, out=out, keepdims=keepdims, backend=backend,
                      force=force, where=dict(where, split_every=split_every) if split_every else where)
    api.refuse_unemulated_out(name, x.dtype, None if out is None else out.dtype)
    public = api.axis_rules_name(name, x.dtype)  # numpy's nanmean of integers is their mean
    rule_op = OPS["mean" if public != name else _RULE_OP.get(name, name)]
    if name == "nanmean" and x.dtype.kind == "f" and dtype is not None:
        api.numpy_result_dtype("nanmean", x.dtype, np.dtype(dtype))  # numpy's TypeError for an integer dtype=
    if name == "nanmean" and x.dtype.kind == "f":
        # as api.nanmean: float16 totals stay float32 until after the divide
        sum_dtype = np.float32 if dtype is None and x.dtype == np.float16 else dtype
        rule = dtype_rule(rule_op, x.dtype, sum_dtype)  # TypeError first, as for numpy input
        acc, out_dtype = rule.acc, np.dtype(dtype if dtype is not None else x.dtype).name
    else:
        name = public  # numpy: nanmean of integers is their mean
        rule = dtype_rule(rule_op, x.dtype, dtype)
        acc, out_dtype = rule.acc, rule.out
        if name == "mean" and x.dtype.kind in "biu" and np.dtype(out_dtype).kind == "f":
            # block totals in float64, as numpy's integer mean sums: 64-bit integer totals
            # wrapped across blocks (ten of 2**62: -9.2e17 for 4.6e18; an outside fuzz run)
            acc = "float64"
    if name in ("var", "std") and np.dtype(out_dtype).kind != "f":
        raise TypeError(f"{name} of a dask array takes a floating dtype=, not {dtype}")
    # numpy's 0-d rules as for numpy input: an int axis 0 / -1 of a 0-d array is no axis for the
    # ufunc reductions (the value comes back), an AxisError for mean/var/std
    axes = api.normalize_axis(axis, x.ndim, single=name in ("argmax", "argmin"),
                              zero_d_int=public in api.ZERO_D_AXIS_FUNCTIONS)
    total = None
    if name == "mean":
        # numpy's total lives in its container before the divide (api._divide): out='s dtype,
        # else the loop's; an integer one wraps, a float16 one overflows past 65504
        container = np.dtype(out.dtype) if out is not None else api.loop_dtype("mean", x.dtype, dtype)
        if container.kind in "iu" or container == np.float16:
            total = container.name
    if out is not None and public in api._NUMPY_FUNCS:
        # numpy's rules for out='s dtype, as for numpy input: argmax into a float out= raises
        api.numpy_result_dtype(public, x.dtype, None if dtype is None else np.dtype(dtype), np.dtype(out.dtype),
                               out.ndim == 0)
    state_acc = acc
    if name in _WIDE_TOTALS and np.dtype(acc) in (np.float16, np.float32):
        state_acc = "float64"  # _float_block_total says why
    spec = _Spec(op=name, axes=axes, acc=acc, state=_state_dtype(name, x.dtype, state_acc), out=out_dtype,
                 ddof=float(ddof), call=call, total=total)
    return _build(x, spec, keepdims, split_every, out)


def _call_options(backend, force, where) -> tuple:
    if isinstance(force, dict):
        force = Force(**force)  # TypeError for unknown fields, now rather than in every task
    elif force is not None and not isinstance(force, Force):
        raise TypeError(f"force must be a clreduce.Force or a dict, not {type(force).__name__}")
    for key, value in where.items():
        if not isinstance(value, str):
            raise TypeError(f"{key}= for a dask array must be a selector string that each worker resolves "
                            f"itself (or set CLREDUCE_DEVICE per worker), not {type(value).__name__}")
    options = dict(where, backend=backend, force=force)
    return tuple(sorted((k, v) for k, v in options.items() if v is not None))


def _norm(x, ord, axis, keepdims, call, split_every, out):
    api.check_norm_request(x.dtype, x.ndim, ord, axis)  # api.norm's checks, before any graph
    kind = next((v for k, v in _NORM_KIND.items() if ord is k or (k is not None and _equal(ord, k))), None)
    if kind is None:
        raise ValueError(f"ord={ord!r} is not supported (supported: None, 1, 2, inf, -inf, 0)")
    out_dtype = x.dtype.name if x.dtype.kind == "f" else "float64"
    # float16 blocks are reduced in float32: a float16 partial norm would round twice
    acc = "float32" if x.dtype == np.float16 else out_dtype
    axes = api.normalize_axis(axis, x.ndim)
    spec = _Spec(op=kind, axes=axes, acc=acc, state=_state_dtype(kind, x.dtype, acc), out=out_dtype,
                 call=call)
    return _build(x, spec, keepdims, split_every, out)


def _equal(ord, k) -> bool:
    try:
        return bool(ord == k)
    except (TypeError, ValueError):
        return False


def _state_dtype(op: str, in_dtype: np.dtype, acc: str) -> np.dtype:
    n = [("n", np.int64)]
    if op in ("mean",):
        return np.dtype([("s", acc)] + n)
    if op == "nanmean":
        return np.dtype([("s", acc), ("c", np.int64)] + n)
    if op in ("var", "std"):
        return np.dtype([("m", np.float64), ("M2", np.float64)] + n)
    if op in ("argmax", "argmin"):
        return np.dtype([("v", in_dtype), ("i", np.int64)] + n)
    if op in ("max", "min", "nanmax", "nanmin"):
        return np.dtype([("s", in_dtype)] + n)
    if op in ("any", "all"):
        return np.dtype([("s", np.bool_)] + n)
    if op in ("count_nonzero", "norm0"):
        return np.dtype([("s", np.int64)] + n)
    if op in ("logsumexp", "norm2"):
        return np.dtype([("s", np.float64)] + n)
    return np.dtype([("s", acc)] + n)  # sum, nansum, prod, norm1, norminf, normneginf


def _build(x, spec: _Spec, keepdims, split_every, out):
    sizes = [x.chunks[i] for i in spec.axes]
    known = all(not math.isnan(c) for cs in sizes for c in cs)
    if known and math.prod(sum(cs) for cs in sizes) == 0 and spec.op in _EMPTY_ERROR:
        raise ValueError(_EMPTY_ERROR[spec.op])
    arg = spec.op in ("argmax", "argmin")
    if arg and not all(not math.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError(f"{spec.op} of a dask array needs known chunk sizes (call compute_chunk_sizes())")
    state_chunks = tuple((1,) * len(c) if i in spec.axes else c for i, c in enumerate(x.chunks))
    meta = np.empty((0,) * x.ndim, spec.state)
    states = x.map_blocks(_block_state_arg if arg else _block_state, spec=spec, chunks=state_chunks,
                          dtype=spec.state, meta=meta, token=f"clreduce-{spec.op}-block")
    out_meta = np.empty((0,) * (x.ndim if keepdims else x.ndim - len(spec.axes)), spec.out)
    result = da.reduction(states, _passthrough, _Aggregate(spec), axis=spec.axes, keepdims=keepdims,
                          dtype=np.dtype(spec.out), split_every=split_every, combine=_Combine(spec),
                          name=f"clreduce-{spec.op}", meta=out_meta)
    if out is None:
        return result
    if out.dtype != result.dtype:
        # numpy casts a reduction's result into out's dtype (np.sum of 5.6 into an int32 out
        # gives 5), as clreduce does for numpy input; dask's own out= takes the result's dtype
        # and turned an int32 out into float32 (an outside review, 2026-11-29)
        result = result.astype(out.dtype)
    from dask.array.core import handle_out  # out= takes the result's graph, as da.reduction's own

    return handle_out(out, result)


def _passthrough(state, axis=None, keepdims=True, computing_meta=False):
    if computing_meta:
        # dask would cast this state's meta to the result dtype and fail; an exception here
        # tells it to use a plain meta for this intermediate layer instead
        raise LookupError("no meta for a partial state")
    return state


# ---- block tasks (run on the workers) ------------------------------------------------------

def where_am_i() -> str:
    """This task's worker, for error messages: dask worker name and address, else host/pid/thread."""
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            worker = distributed.get_worker()
            return f"dask worker {worker.name!r} at {worker.address} (host {socket.gethostname()}, pid {os.getpid()})"
        except ValueError:
            pass  # not inside a distributed worker
    return f"host {socket.gethostname()} pid {os.getpid()} thread {threading.current_thread().name!r}"


def _naming_the_worker(fn):
    """Re-raise NoOpenCLDevice with the worker's name: the client otherwise sees only the selector."""

    @functools.wraps(fn)  # keeps fn's signature: map_blocks looks for block_info= in it
    def wrapped(block, spec, **kw):
        try:
            return fn(block, spec, **kw)
        except RuntimeError as exc:
            opencl = sys.modules.get("clreduce.backends.opencl")
            if opencl is not None and type(exc) is opencl.NoOpenCLDevice:
                raise opencl.NoOpenCLDevice(
                    f"{where_am_i()}: {exc} (set CLREDUCE_DEVICE or PYOPENCL_CTX in that worker's environment; "
                    "README, 'Dask')") from exc
            raise

    return wrapped


def _identity(op: str, dtype: np.dtype):
    """The value an empty block contributes to a merge that has no identity of its own."""
    big = (lambda s: np.inf * s) if dtype.kind == "f" else (
        (lambda s: s > 0) if dtype.kind == "b" else (lambda s: np.iinfo(dtype).max if s > 0 else np.iinfo(dtype).min))
    if op in ("nanmax", "nanmin") and dtype.kind == "f":
        return np.nan  # fmax/fmin skip it
    return {"max": big(-1), "argmax": big(-1), "nanmax": big(-1), "min": big(1), "argmin": big(1),
            "nanmin": big(1), "logsumexp": -np.inf, "normneginf": np.inf}[op]


def _clr(name, block, spec, **kw):
    import clreduce  # the public API, on this process's default device

    return getattr(clreduce, name)(block, keepdims=True, **dict(spec.call), **kw)


@_naming_the_worker
def _block_state(block, spec: _Spec):
    axes, op = spec.axes, spec.op
    n = math.prod(block.shape[i] for i in axes)
    shape = tuple(1 if i in axes else d for i, d in enumerate(block.shape))
    state = np.empty(shape, spec.state)
    state["n"] = n
    if n == 0 and op in ("max", "min", "nanmax", "nanmin", "logsumexp", "normneginf"):
        state["s"] = _identity(op, state.dtype["s"])
        return state
    if op in ("var", "std"):
        if n == 0:
            state["m"], state["M2"] = 0.0, 0.0
            return state
        state["m"] = _block_mean(block, spec, axes)
        state["M2"] = np.asarray(_clr("var", block, spec, axis=axes, dtype=spec.acc), np.float64) * n
    elif op == "mean" and block.dtype.kind in "biu" and spec.acc == "float64":
        state["s"] = _integer_block_total(block, spec, axes, n)
    elif op in ("mean", "nanmean"):
        state["s"] = _float_block_total("nansum" if op == "nanmean" else "sum", block, spec, axes)
        if op == "nanmean":
            state["c"] = _count_notnan(block, spec)
    elif op in ("sum", "nansum", "prod"):
        state["s"] = _float_block_total(op, block, spec, axes)
    elif op in ("nanmax", "nanmin"):
        # api's own op, not the public nanmax: that one warns for every all-NaN slice of a block
        state["s"] = api._reduce(op, block, axes, keepdims=True, **_reduce_kw(spec))
    elif op == "logsumexp":
        # float16 blocks in float32: a float16 partial log-sum-exp would round twice
        src = block.astype(np.float32) if block.dtype == np.float16 else block
        state["s"] = _clr("logsumexp", src, spec, axis=axes)
    elif op.startswith("norm"):
        src = block.astype(np.float32) if block.dtype == np.float16 and op in ("norm1", "norm2") else block
        one_axis = axes[0] if len(axes) == 1 else None
        if op == "norm0":  # an exact count: api.norm's ord=0 count comes back in the input's float dtype
            state["s"] = _clr("count_nonzero", src, spec, axis=axes)
        else:
            # ord=None, not 2: over every axis of an n-d block, 2 would ask for a matrix norm
            ord_ = {"norm1": 1, "norm2": None, "norminf": np.inf, "normneginf": -np.inf}[op]
            state["s"] = _clr("norm", src, spec, ord=ord_, axis=one_axis)
    else:  # max, min, any, all, count_nonzero
        state["s"] = _clr(op, block, spec, axis=axes)
    return state


def _block_dtype(block, spec: _Spec):
    """dtype= of a block's sum: a float16 result of wider input asks for float16 by name, so each
    element is rounded to float16 first, as numpy's float16 loop does (api's _sum_in; the
    accumulator's float32 had summed the unrounded values: an outside fuzz run, 2026-11-29)."""
    if spec.out == "float16" and block.dtype != np.float16 and spec.op != "nanmean":
        return np.float16
    return spec.acc


def _float_block_total(name: str, block, spec: _Spec, axes):
    """A block's sum or product. Where the state is float64 and the accumulator narrower
    (float16 and float32 data), the block is summed in float64 where the device has fp64: a
    float32 block total past the float range (3e38 + 3e38 in one block, -3e38 - 3e38 in the
    next) met the next one as inf + (-inf) = NaN in the merge, where numpy input's rescued sum
    gives the total, 0 (an outside fuzz run, 2026-11-29); and the merge adds in float64. A
    device without fp64 sums in the accumulator (its block totals cast to float64), as before.
    A float16 result of wider input keeps its float16 elements (_block_dtype)."""
    dtype = np.dtype(_block_dtype(block, spec))
    if spec.state["s"] == np.float64 and dtype == np.float32:
        return _in_float64_else(name, block, spec, axes, dtype)
    return _clr(name, block, spec, axis=axes, dtype=dtype)


def _in_float64_else(name: str, block, spec: _Spec, axes, dtype):
    """clreduce.``name`` of the block with dtype=float64 where the device has fp64, else with
    ``dtype`` (rusticl, Mali: UnsupportedOnDevice for the float64 run)."""
    from .plan import UnsupportedOnDevice

    try:
        return _clr(name, block, spec, axis=axes, dtype=np.float64)
    except UnsupportedOnDevice:
        return _clr(name, block, spec, axis=axes, dtype=dtype)


def _integer_block_total(block, spec: _Spec, axes, n: int):
    """An integer mean's block total in float64 (reduce() says why): summed in float64 where the
    device has fp64; else the block's mean (exact integer sum, one rounding: no fp64 needed)
    times its count, within an ulp of it -- a float64 sum had refused devices without fp64
    (rusticl, Mali), where the mean of numpy input works."""
    from .plan import UnsupportedOnDevice

    try:
        return _clr("sum", block, spec, axis=axes, dtype=np.float64)
    except UnsupportedOnDevice:
        return np.asarray(_clr("mean", block, spec, axis=axes), np.float64) * n


def _block_mean(block, spec: _Spec, axes):
    """A block's mean for Chan's merge, in float64 where the device has it: a float32 block
    mean's rounding, squared into the merge's deviations, had put var of float32 data near
    10000 0.85 % off (an outside fuzz run, 2026-11-29). Devices without fp64 keep the
    accumulator's mean (README, Dask)."""
    if np.dtype(spec.acc) != np.float64:
        return _in_float64_else("mean", block, spec, axes, spec.acc)
    return _clr("mean", block, spec, axis=axes, dtype=spec.acc)


def _reduce_kw(spec):
    call = dict(spec.call)
    return dict(backend=call.pop("backend", None), force=call.pop("force", None), where=call)


def _count_notnan(block, spec):
    return api._reduce("count_notnan", block, spec.axes, keepdims=True, **_reduce_kw(spec))


@_naming_the_worker
def _block_state_arg(block, spec: _Spec, block_info=None):
    info = block_info[0]
    offsets = [start for start, _ in info["array-location"]]
    shape = tuple(1 if i in spec.axes else d for i, d in enumerate(block.shape))
    state = np.empty(shape, spec.state)
    n = math.prod(block.shape[i] for i in spec.axes)
    state["n"] = n
    if n == 0:
        state["v"], state["i"] = _identity(spec.op, block.dtype), _INDEX_NONE
        return state
    if len(spec.axes) == 1:
        ax = spec.axes[0]
        local = np.asarray(_clr(spec.op, block, spec, axis=ax))
        state["v"] = np.take_along_axis(block, local, axis=ax)
        state["i"] = local + offsets[ax]
    else:  # every axis of an n-d array: numpy's flat (C order) index into the whole array
        local = np.unravel_index(int(np.asarray(_clr(spec.op, block, spec, axis=None)).reshape(-1)[0]), block.shape)
        state["v"] = block[local]
        state["i"] = np.ravel_multi_index(tuple(j + o for j, o in zip(local, offsets)), info["shape"])
    return state


# ---- merging states (host, numpy) ----------------------------------------------------------

class _Combine:
    """States concatenated along the reduced axes -> one state (those axes kept at length 1)."""

    def __init__(self, spec: _Spec):
        self.spec = spec

    def __dask_tokenize__(self):
        return (type(self).__name__, self.spec)

    def __call__(self, s, axis, keepdims=True, **_):
        op, kw = self.spec.op, dict(axis=axis, keepdims=True)
        out = np.empty(np.sum(s["n"], **kw).shape, s.dtype)
        out["n"] = np.sum(s["n"], **kw)
        with np.errstate(all="ignore"):
            if op in ("var", "std"):
                # Chan et al.: M2 = sum M2_i + sum n_i (m_i - m)^2 with m the weighted mean;
                # empty blocks (n_i = 0) carry no weight, whatever their m_i.
                n = out["n"]
                m = np.sum(np.where(s["n"] > 0, s["m"] * s["n"], 0.0), **kw) / np.where(n > 0, n, 1)
                dev = np.where(s["n"] > 0, s["n"] * (s["m"] - m) ** 2, 0.0)
                out["m"], out["M2"] = m, np.sum(s["M2"], **kw) + np.sum(dev, **kw)
            elif op in ("argmax", "argmin"):
                v = s["v"]
                best = (np.max if op == "argmax" else np.min)(v, **kw)  # NaN propagates: first NaN wins
                hit = v == best
                if v.dtype.kind == "f":
                    hit |= np.isnan(v) & np.isnan(best)
                out["v"], out["i"] = best, np.min(np.where(hit, s["i"], _INDEX_NONE), **kw)
            elif op == "nanmean":
                out["s"], out["c"] = np.sum(s["s"], dtype=s.dtype["s"], **kw), np.sum(s["c"], **kw)
            else:
                out["s"] = _MERGE[op](s["s"], kw)
        return out


def _lse(v, kw):
    top = np.max(v, **kw)
    shift = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.sum(np.exp(v - shift), **kw)) + shift


def _hypot(v, kw):
    top = np.max(v, **kw)  # scaled so float64 partial norms of float64 data cannot overflow
    scale = np.where((top > 0) & np.isfinite(top), top, 1.0)
    return np.where(np.isfinite(top), scale * np.sqrt(np.sum((v / scale) ** 2, **kw)), top)


_MERGE = {
    "sum": lambda v, kw: np.sum(v, dtype=v.dtype, **kw), "nansum": lambda v, kw: np.sum(v, dtype=v.dtype, **kw),
    "mean": lambda v, kw: np.sum(v, dtype=v.dtype, **kw), "prod": lambda v, kw: np.prod(v, dtype=v.dtype, **kw),
    "count_nonzero": lambda v, kw: np.sum(v, **kw), "norm0": lambda v, kw: np.sum(v, **kw),
    "norm1": lambda v, kw: np.sum(v, dtype=v.dtype, **kw), "norm2": _hypot,
    "max": lambda v, kw: np.max(v, **kw), "min": lambda v, kw: np.min(v, **kw),
    "norminf": lambda v, kw: np.max(v, **kw), "normneginf": lambda v, kw: np.min(v, **kw),
    "nanmax": lambda v, kw: np.fmax.reduce(v, **kw), "nanmin": lambda v, kw: np.fmin.reduce(v, **kw),
    "any": lambda v, kw: np.any(v, **kw), "all": lambda v, kw: np.all(v, **kw), "logsumexp": _lse,
}


class _Aggregate(_Combine):
    """The last merge, then numpy's value, dtype and warnings for the result."""

    def __call__(self, s, axis, keepdims=False, **_):
        spec, op = self.spec, self.spec.op
        s = super().__call__(s, axis)
        out_dtype = np.dtype(spec.out)
        n = s["n"]
        if op in _EMPTY_ERROR and n.size and np.any(n == 0):
            raise ValueError(_EMPTY_ERROR[op])  # reached only when chunk sizes were unknown
        with np.errstate(all="ignore"):
            if op in ("var", "std"):
                if n.size and np.any(n - spec.ddof <= 0):
                    warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
                r = s["M2"] / np.maximum(n - spec.ddof, 0)
                r = np.sqrt(r) if op == "std" else r
            elif op in ("mean", "nanmean"):
                count = s["c"] if op == "nanmean" else n
                if count.size and np.any(count == 0):
                    warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
                total = s["s"]
                if spec.total is not None:
                    total = total.astype(spec.total)  # wraps, or overflows, as numpy's (see _Spec)
                r = total.astype(np.float64) / count if total.dtype.kind in "biu" else total / count
            elif op in ("argmax", "argmin"):
                r = s["i"]
            else:
                r = s["s"]
            r = np.asarray(r).astype(out_dtype)
        if op in ("nanmax", "nanmin") and np.any(np.isnan(r)):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        if not keepdims:
            r = r.reshape([d for i, d in enumerate(r.shape) if i not in axis])
        return r[()] if r.ndim == 0 else r
