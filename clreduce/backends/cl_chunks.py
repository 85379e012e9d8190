"""Numpy inputs in pieces: beyond one device allocation, or gathered from a strided view.

A numpy input reaches the device in one piece when it is C-contiguous and fits one
allocation (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, lowered by ``CLREDUCE_MAX_ALLOC_BYTES``). Else
it runs in pieces of the ``(rows, K, inner)`` problem, at most two resident at a time:

* **rows**: whole rows (``K * inner`` elements each) per piece; results are concatenated,
  so they are exactly the unchunked ones;
* **K pieces**: when one row does not fit, each row's reduced axis is cut into pieces
  whose results merge on the host (``merge_pieces``): sums and counts add (in 64 bits for
  integers), max/min/any/all combine, float means weight by piece length, argmax/argmin
  take the first best (first NaN) with the piece offset added, logsumexp and norm-2 merge
  their scaled forms, var/std merge each piece's (count, mean, M2) with Chan's update.
  Integer results equal the unchunked ones exactly;
* **column tiles**: when even one step of the reduced axis (``inner`` elements) does not
  fit, tiles of up to 256 steps x a column range are gathered (a leading-axis reduction of
  a huge array).

A piece that is a contiguous part of a C-contiguous input is wrapped in place (zero-copy,
see ``cl_host``); a piece of a strided view (a transposed or sliced array, reduced axes that
are not adjacent) or of an input the device cannot read in its own dtype (float64 on a
device without fp64) is copied into a host buffer of at most ``gather_bytes``. The copy of
piece i+1 runs on this thread while the device reduces piece i (its kernels were enqueued
without waiting); on devices that do not share host memory the upload goes through a second
queue so it can overlap the previous piece's kernels.
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np

from ..ops import OPS, dtype_rule
from ..plan import Problem
from .cl_host import PAGE, SIZE_MULTIPLE, InputTooLarge, alloc_limit

# Host copies of strided inputs go in pieces of at least this size (a launch costs ~0.1-0.4 ms
# of Python and driver time: a smaller piece would spend more on launches than on copying)...
GATHER_MIN_BYTES = 16 << 20
# ... and at most 1/GATHER_FRACTION of the input, so two resident pieces add little memory
# to a large input.
GATHER_FRACTION = 32
# Column tiles (one reduced step does not fit an allocation): reduced steps per tile.
TILE_STEPS = 256
# Pieces enqueued before the oldest is waited for: 2 lets the host prepare (gather) piece
# i+1 while the device reduces piece i; 1 runs them one after another (tools/bench_pieces.py
# compares the two).
IN_FLIGHT = 2


@dataclasses.dataclass
class _Piece:
    view: np.ndarray   # the input part, in (rows, K, inner) order once materialised
    r0: int
    r1: int
    kj: int            # index of the K piece
    c0: int
    c1: int
    k_len: int


def reduce_pieces(queue, src: np.ndarray, problem: Problem, force, start, as_dtype=None) -> np.ndarray:
    """The flat ``(rows * inner,)`` result of ``problem`` on ``src``.

    ``src`` is a numpy array whose elements in C order are the problem's
    ``(rows, K, inner)``, possibly a strided view; ``as_dtype`` converts it on the way (the
    problem's dtype is then ``as_dtype``'s). ``start(queue, piece, sub_problem, force)``
    enqueues one contiguous piece and returns a handle with ``result()`` (waits, reads
    back) and ``release()``.
    """
    dtype = np.dtype(as_dtype or src.dtype)
    limit = alloc_limit(queue.device) - PAGE - SIZE_MULTIPLE  # room for the wrapped page lead
    if src.flags.c_contiguous and dtype == src.dtype and src.nbytes <= limit:
        handle = start(queue, src, problem, force)
        try:
            return handle.result()
        finally:
            handle.release()
    copying = not src.flags.c_contiguous or dtype != src.dtype
    budget = limit
    if copying:
        budget = min(limit, max(GATHER_MIN_BYTES, src.size * dtype.itemsize // GATHER_FRACTION))
    budget_items = max(1, budget // max(dtype.itemsize, src.dtype.itemsize))
    pieces, k_bounds = _cut(src, problem, budget_items, limit // max(dtype.itemsize, src.dtype.itemsize))
    return _run(queue, pieces, k_bounds, problem, force, start, dtype)


def _cut(src, problem: Problem, budget: int, alloc_items: int):
    """The pieces and the K-piece bounds ``[(k0, k1), ...]`` (one ``(0, K)`` without K split)."""
    rows, k, inner = problem.rows, problem.row_len, problem.inner
    view, lead, k_dims = _split_dims(src, rows, k, inner)
    row_items = k * inner
    if row_items <= budget:
        pieces = [_Piece(b, s // row_items, (s + b.size) // row_items, 0, 0, inner, k)
                  for s, b in _blocks(view, lead, budget)]
        return pieces, [(0, k)]
    if inner <= budget:
        # rows one by one, each cut along K into pieces of whole reduced steps
        pieces, bounds = [], None
        for r, row in _rows(view, lead):
            cuts = list(_blocks(row, k_dims, budget))
            this = [(s // inner, (s + b.size) // inner) for s, b in cuts]
            bounds = bounds or this
            pieces += [_Piece(b, r, r + 1, j, 0, inner, k1 - k0) for j, ((k0, k1), (_, b)) in enumerate(zip(this, cuts))]
        return pieces, bounds
    if not src.flags.c_contiguous:
        raise InputTooLarge(
            f"one step of the reduced axis ({inner} elements) exceeds one allocation ({alloc_items} elements: "
            f"CL_DEVICE_MAX_MEM_ALLOC_SIZE or CLREDUCE_MAX_ALLOC_BYTES) and the input is a strided view: "
            f"(rows, K, inner) = ({rows}, {k}, {inner}), op {problem.op}; pass a C-contiguous array")
    x3 = src.reshape(rows, k, inner)
    steps = min(k, TILE_STEPS)
    width = max(1, budget // steps)
    bounds = [(k0, min(k, k0 + steps)) for k0 in range(0, k, steps)]
    pieces = [_Piece(x3[r:r + 1, k0:k1, c0:c0 + width], r, r + 1, j, c0, min(inner, c0 + width), k1 - k0)
              for r in range(rows) for j, (k0, k1) in enumerate(bounds) for c0 in range(0, inner, width)]
    return pieces, bounds


def _split_dims(src, rows: int, k: int, inner: int):
    """(view, lead, k_dims): ``view`` is ``src`` or its 3-D view; its first ``lead`` axes
    enumerate the rows and the next ``k_dims`` the reduced axis."""
    if src.flags.c_contiguous:
        return src.reshape(rows, k, inner), 1, 1
    shape = src.shape
    lead = _prefix(shape, 0, rows)
    k_dims = None if lead is None else _prefix(shape, lead, k)
    if k_dims is None or math.prod(shape[lead + k_dims:]) != inner:
        raise ValueError(f"internal: shape {shape} does not split into ({rows}, {k}, {inner})")
    return src, lead, k_dims


def _prefix(shape, first: int, product: int):
    """Smallest n with prod(shape[first:first + n]) == product."""
    p = 1
    for n in range(len(shape) - first + 1):
        if p == product:
            return n
        if n < len(shape) - first:
            p *= shape[first + n]
    return None


def _blocks(view: np.ndarray, lead: int, budget: int, start: int = 0):
    """(first element, block) pairs covering ``view`` in C order. A unit is
    ``view[i_0, ..., i_lead-1]``; a block is a view of whole units holding at most ``budget``
    elements, or a single unit when one is larger."""
    if view.size <= budget or lead == 0:
        yield start, view
        return
    n = view.shape[0]
    unit = view.size // n
    if unit <= budget:
        step = budget // unit
        for i in range(0, n, step):
            yield start + i * unit, view[i:i + step]
    else:
        for i in range(n):
            yield from _blocks(view[i], lead - 1, budget, start + i * unit)


def _rows(view: np.ndarray, lead: int):
    """(row index, row view) for every row (the first ``lead`` axes enumerate them)."""
    for r, index in enumerate(np.ndindex(*view.shape[:lead])):
        yield r, view[index]


def _materialise(piece: _Piece, dtype) -> np.ndarray:
    rows, cols = piece.r1 - piece.r0, piece.c1 - piece.c0
    view = piece.view
    if view.flags.c_contiguous and view.dtype == dtype:
        return view.reshape(rows, piece.k_len, cols)
    host = np.empty((rows, piece.k_len, cols), dtype)
    np.copyto(host.reshape(view.shape), view, casting="unsafe")
    return host


def _run(queue, pieces, k_bounds, problem: Problem, force, start, dtype) -> np.ndarray:
    op = problem.op
    moments = op in ("var", "std")
    n_k = len(k_bounds)
    parts = values = means = None
    out = None
    pending = collections.deque()

    def finish(item):
        nonlocal parts, values, means, out
        piece, host, handles = item
        try:
            got = [h.result() for h in handles]
        finally:
            for h in handles:
                h.release()
        rows, cols = piece.r1 - piece.r0, piece.c1 - piece.c0
        if n_k == 1:
            if out is None:
                out = np.empty((problem.rows, problem.inner), got[0].dtype)
            out[piece.r0:piece.r1, piece.c0:piece.c1] = got[0].reshape(rows, cols)
            return
        if parts is None:
            parts = np.empty((problem.rows, n_k, problem.inner), got[0].dtype)
        parts[piece.r0:piece.r1, piece.kj, piece.c0:piece.c1] = got[0].reshape(rows, cols)
        if op in ("argmax", "argmin"):
            if values is None:
                values = np.empty((problem.rows, n_k, problem.inner), host.dtype)
            index = got[0].reshape(rows, 1, cols).astype(np.intp)
            values[piece.r0:piece.r1, piece.kj, piece.c0:piece.c1] = np.take_along_axis(host, index, axis=1)[:, 0]
        elif moments:
            if means is None:
                means = np.empty((problem.rows, n_k, problem.inner), np.float64)
            mean = got[1].astype(np.float64)
            if _host_divide("mean", host.dtype, problem):
                mean = mean / piece.k_len
            means[piece.r0:piece.r1, piece.kj, piece.c0:piece.c1] = mean.reshape(rows, cols)

    try:
        for piece in pieces:
            host = _materialise(piece, dtype)  # overlaps the previous piece's kernels
            sub = dataclasses.replace(problem, rows=piece.r1 - piece.r0, row_len=piece.k_len,
                                      inner=piece.c1 - piece.c0, dtype=dtype.name)
            handles = []
            try:
                if moments and n_k > 1:
                    handles.append(start(queue, host, dataclasses.replace(sub, op="var", param=0.0), force))
                    handles.append(start(queue, host, dataclasses.replace(sub, op="mean", param=0.0), force))
                else:
                    handles.append(start(queue, host, sub, force))
            except BaseException:
                for h in handles:
                    h.release()
                raise
            pending.append((piece, host, handles))
            if len(pending) >= IN_FLIGHT:  # at most IN_FLIGHT (two) pieces resident
                finish(pending.popleft())
        while pending:
            finish(pending.popleft())
    finally:
        for _, _, handles in pending:  # an error: free what is still wrapped
            for h in handles:
                h.release()
    if n_k == 1:
        return out.reshape(-1)
    lengths = np.asarray([k1 - k0 for k0, k1 in k_bounds], np.int64)
    starts = np.asarray([k0 for k0, _ in k_bounds], np.int64)
    return merge_pieces(problem, dtype, parts, lengths, starts, values, means).reshape(-1)


def _host_divide(op: str, dtype, problem: Problem) -> bool:
    return dtype_rule(OPS[op], np.dtype(dtype), problem.acc_dtype if op == problem.op else None).host_divide


def merge_pieces(problem: Problem, dtype, parts, lengths, starts, values=None, means=None) -> np.ndarray:
    """Merge ``(rows, pieces, inner)`` per-piece results along axis 1 into ``(rows, inner)``.

    ``lengths``/``starts``: each K piece's length and first index; ``values``: argmax/argmin's
    values at the pieces' indices; ``means``: var/std's per-piece means (``parts`` then holds
    the population variances).
    """
    op = problem.op
    rule = dtype_rule(OPS[op], np.dtype(dtype), problem.acc_dtype)
    w = lengths.reshape(1, -1, 1)
    if op in ("argmax", "argmin"):
        index = parts.astype(np.int64) + starts.reshape(1, -1, 1)
        # numpy's rule: the first NaN wins, else the first best value (pieces are in order)
        nan = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
        best = np.argmax(values, axis=1) if op == "argmax" else np.argmin(values, axis=1)
        best = np.where(nan.any(axis=1), np.argmax(nan, axis=1), best)
        return np.take_along_axis(index, best[:, None, :], axis=1)[:, 0].astype(parts.dtype)
    if op in ("var", "std"):
        n = float(lengths.sum())
        var = parts.astype(np.float64)  # the pieces ran "var" (population) for std too
        mean = (means * w).sum(axis=1) / n
        m2 = (var * w).sum(axis=1) + (w * (means - mean[:, None, :]) ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):  # ddof >= K: numpy's inf/nan
            value = m2 / max(n - problem.param, 0.0)
        return (np.sqrt(value) if op == "std" else value).astype(parts.dtype)
    if op == "mean":
        if rule.host_divide:  # integer mean: the device wrote exact sums; the caller divides by K
            return parts.sum(axis=1, dtype=parts.dtype)
        return ((parts.astype(np.float64) * w).sum(axis=1) / lengths.sum()).astype(parts.dtype)
    if op == "logsumexp":
        wide = parts.astype(np.float64)
        top = wide.max(axis=1, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        return (safe[:, 0] + np.log(np.exp(wide - safe).sum(axis=1))).astype(parts.dtype)
    if op == "norm2":  # pieces hold sqrt(sum of squares): rescale by the largest to avoid overflow
        wide = parts.astype(np.float64)
        top = wide.max(axis=1, keepdims=True)
        safe = np.where((top > 0) & np.isfinite(top), top, 1.0)
        merged = safe[:, 0] * np.sqrt(((wide / safe) ** 2).sum(axis=1))
        return np.where(np.isinf(top[:, 0]), top[:, 0], merged).astype(parts.dtype)  # inf (or NaN) stays
    return _MERGE[op](parts, axis=1).astype(parts.dtype)


def _sum(parts, axis):
    if parts.dtype.kind == "f":
        # float pieces add in float64 and round once: the device sums are compensated
        # (README, Tolerances), a plain float32 sum of the pieces would add their error
        return parts.astype(np.float64).sum(axis=axis)
    return parts.sum(axis=axis, dtype=parts.dtype)


_MERGE = {
    "sum": _sum, "nansum": _sum, "count_nonzero": _sum, "count_notnan": _sum, "norm1": _sum,
    "prod": lambda p, axis: p.prod(axis=axis, dtype=p.dtype),
    "max": np.max, "min": np.min, "norminf": np.max, "normneginf": np.min,
    "nanmax": np.fmax.reduce, "nanmin": np.fmin.reduce, "any": np.any, "all": np.all,
}
