"""Numpy inputs on OpenCL devices: wrap in place where memory is shared, chunk what is too big.

Zero-copy: CPU devices and GPUs with CL_DEVICE_HOST_UNIFIED_MEMORY (Mali, Adreno, Intel
iGPU) read host memory directly, so the input is wrapped with CL_MEM_USE_HOST_PTR instead of
copied (a COPY_HOST_PTR buffer of 256 MB took ~130 ms on the Intel CPU runtime and doubled
peak memory). The Intel runtime only uses the pointer in place when it is 4096-byte aligned
and the size a multiple of 64 (Intel's OpenCL optimization guide); numpy's allocator gives
16-byte alignment. So the wrapped region starts at the page that holds the array's first
byte and ends at the next multiple of 64: both lie inside pages the array already occupies,
so every byte is mapped, and the kernel reads from an element offset. The buffer is
READ_ONLY (the caller's array is never written) and released before the call returns, after
the kernels finished, so no device object keeps the pointer.

Devices that do not share memory (NVIDIA's OpenCL) keep the copy.
"""

from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pyopencl as cl

from .. import config
from ..plan import Problem

PAGE = 4096
SIZE_MULTIPLE = 64
# Wrapping has a fixed cost (creating a USE_HOST_PTR buffer: ~17 us on the Intel runtime,
# ~7 us on PoCL, measured on a loaded 2-core EPYC) where a copy costs ~2.5 us per KB on
# Intel and ~0.13 us per KB on PoCL: below this size the copy is as cheap or cheaper, and
# its memory does not matter.
ZERO_COPY_MIN_BYTES = 16 * 1024

_shared: dict[int, bool] = {}


class InputTooLarge(MemoryError):
    """An input exceeds one device allocation and cannot be cut into row chunks."""


def shares_host_memory(device: cl.Device) -> bool:
    """True for CPU devices and devices reporting CL_DEVICE_HOST_UNIFIED_MEMORY."""
    key = device.int_ptr
    shared = _shared.get(key)
    if shared is None:
        shared = bool(device.type & cl.device_type.CPU)
        if not shared:
            try:  # deprecated in OpenCL 2.0 but still answered by every driver we know
                shared = bool(device.host_unified_memory)
            except cl.Error:
                shared = False
        _shared[key] = shared
    return shared


_limits: dict[int, int] = {}


def alloc_limit(device: cl.Device) -> int:
    """Bytes one input buffer may hold: the probed max_mem_alloc_size, lowered by
    CLREDUCE_MAX_ALLOC_BYTES."""
    key = device.int_ptr
    limit = _limits.get(key)
    if limit is None:
        from .opencl import caps_of

        limit = _limits[key] = caps_of(device).max_mem_alloc_size
    override = config.max_alloc_bytes()
    return min(limit, override) if override else limit


def input_buffer(ctx: cl.Context, device: cl.Device, src: np.ndarray) -> tuple[cl.Buffer, int, bool]:
    """(buffer, element offset, wrapped) holding ``src``: wrapped in place when the device
    shares host memory, else a copy. For a wrapped one the caller keeps ``src`` alive and
    releases the buffer once the kernels finished."""
    mf = cl.mem_flags
    if (src.nbytes >= ZERO_COPY_MIN_BYTES and src.flags.c_contiguous and shares_host_memory(device)
            and config.zero_copy()):
        addr = src.ctypes.data
        lead = addr % PAGE
        if lead % src.itemsize == 0:
            total = -(-(lead + src.nbytes) // SIZE_MULTIPLE) * SIZE_MULTIPLE
            region = (ctypes.c_char * total).from_address(addr - lead)
            return cl.Buffer(ctx, mf.READ_ONLY | mf.USE_HOST_PTR, hostbuf=region), lead // src.itemsize, True
    return cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src), 0, False


def reduce_host(queue: cl.CommandQueue, src: np.ndarray, problem: Problem, force, run_once) -> np.ndarray:
    """Run ``run_once(queue, src, problem, force)`` on the whole input when it fits one
    allocation, else on row chunks that do (one resident at a time), concatenating the
    per-row results: chunks hold whole rows, so the answer is exactly the unchunked one."""
    limit = alloc_limit(queue.device) - PAGE - SIZE_MULTIPLE  # room for the wrapped page lead
    if src.nbytes <= limit:
        return run_once(queue, src, problem, force)
    row_bytes = problem.row_len * problem.inner * src.itemsize
    if row_bytes > limit and problem.inner == 1 and problem.op in _MERGE:
        return _split_rows(queue, src, problem, force, run_once, limit)
    if problem.rows < 2 or row_bytes > limit:
        raise InputTooLarge(
            f"input of {src.nbytes} bytes exceeds one allocation on {queue.device.name.strip()!r} "
            f"({limit + PAGE + SIZE_MULTIPLE} bytes: CL_DEVICE_MAX_MEM_ALLOC_SIZE or CLREDUCE_MAX_ALLOC_BYTES), "
            f"and one reduced row of {row_bytes} bytes does not fit either: op {problem.op}, "
            f"whose pieces clreduce cannot merge yet (it can for {', '.join(sorted(_MERGE))}), "
            f"(rows, row_len, inner) = ({problem.rows}, {problem.row_len}, {problem.inner}). Splitting a "
            f"single row across allocations is not supported yet; reduce along another axis first "
            f"or pass a pyopencl array")
    per_chunk = max(1, limit // row_bytes)
    flat = src.reshape(problem.rows, -1)
    parts = []
    for r0 in range(0, problem.rows, per_chunk):
        r1 = min(problem.rows, r0 + per_chunk)
        sub = dataclasses.replace(problem, rows=r1 - r0)
        parts.append(run_once(queue, flat[r0:r1], sub, force))
    return np.concatenate(parts)


# Ops whose per-piece device results merge on the host into the whole row's result:
# (how to merge an (rows, pieces) array of piece results, given piece lengths).
def _merge_same(fn):
    return lambda parts, lengths, rule: fn(parts, axis=1).astype(parts.dtype)


def _merge_mean(parts, lengths, rule):
    if rule.host_divide:  # integer mean: the device wrote exact sums; the API divides by K
        return parts.sum(axis=1, dtype=parts.dtype)
    weights = np.asarray(lengths, np.float64)
    return ((parts.astype(np.float64) * weights).sum(axis=1) / weights.sum()).astype(parts.dtype)


def _merge_logsumexp(parts, lengths, rule):
    wide = parts.astype(np.float64)
    top = wide.max(axis=1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    return (safe[:, 0] + np.log(np.exp(wide - safe).sum(axis=1))).astype(parts.dtype)


_MERGE = {
    "sum": _merge_same(np.sum), "nansum": _merge_same(np.sum), "count_nonzero": _merge_same(np.sum),
    "count_notnan": _merge_same(np.sum), "prod": _merge_same(np.prod), "max": _merge_same(np.max),
    "min": _merge_same(np.min), "nanmax": _merge_same(np.fmax.reduce), "nanmin": _merge_same(np.fmin.reduce),
    "any": _merge_same(np.any), "all": _merge_same(np.all), "norm1": _merge_same(np.sum),
    "norminf": _merge_same(np.max), "normneginf": _merge_same(np.min), "mean": _merge_mean,
    "logsumexp": _merge_logsumexp, "argmax": None, "argmin": None, "var": None, "std": None,
}


def _split_rows(queue, src, problem: Problem, force, run_once, limit: int) -> np.ndarray:
    """Rows longer than one allocation: reduce pieces of each row, merge on the host.

    Integer results equal the unchunked ones exactly (sums in 64 bits, max/min/argmax are
    order-free); float sums and means round in another order (within the usual tolerance).
    """
    from ..ops import OPS, dtype_rule

    rule = dtype_rule(OPS[problem.op], src.dtype, problem.acc_dtype)
    piece = max(1, limit // src.itemsize)
    starts = list(range(0, problem.row_len, piece))
    lengths = [min(piece, problem.row_len - s) for s in starts]
    rows = src.reshape(problem.rows, problem.row_len)
    if problem.op in ("var", "std"):
        return _split_moments(queue, rows, problem, force, run_once, starts, lengths)
    parts = np.stack([
        np.concatenate([run_once(queue, rows[r:r + 1, s:s + n], dataclasses.replace(problem, rows=1, row_len=n),
                                 force) for s, n in zip(starts, lengths)])
        for r in range(problem.rows)])
    if problem.op in ("argmax", "argmin"):
        index = parts.astype(np.int64) + np.asarray(starts, np.int64)
        values = np.take_along_axis(rows, index, axis=1)
        # numpy's rule: the first NaN wins, else the first best value (pieces are in order)
        nan = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
        best = np.argmax(values, axis=1) if problem.op == "argmax" else np.argmin(values, axis=1)
        best = np.where(nan.any(axis=1), np.argmax(nan, axis=1), best)
        return index[np.arange(problem.rows), best].astype(parts.dtype)
    return _MERGE[problem.op](parts, lengths, rule)


def _split_moments(queue, rows, problem: Problem, force, run_once, starts, lengths) -> np.ndarray:
    """var/std of long rows: each piece's mean and population variance from the device, merged
    with Chan et al.'s pairwise update (M2 = sum M2_j + sum n_j (mean_j - mean)^2) in float64."""
    n = np.asarray(lengths, np.float64)
    out = []
    for r in range(problem.rows):
        means, m2 = [], []
        for s, k in zip(starts, lengths):
            piece = rows[r:r + 1, s:s + k]
            means.append(run_once(queue, piece, dataclasses.replace(problem, op="mean", rows=1, row_len=k,
                                                                    param=0.0), force)[0])
            var = run_once(queue, piece, dataclasses.replace(problem, op="var", rows=1, row_len=k, param=0.0),
                           force)
            m2.append(float(var[0]) * k)
            dtype = var.dtype
        means = np.asarray(means, np.float64)
        mean = (means * n).sum() / n.sum()
        total = np.sum(m2) + (n * (means - mean) ** 2).sum()
        with np.errstate(divide="ignore", invalid="ignore"):  # ddof >= K: numpy's inf/nan
            value = total / max(n.sum() - problem.param, 0.0)
        out.append(np.sqrt(value) if problem.op == "std" else value)
    return np.asarray(out, np.float64).astype(dtype)
