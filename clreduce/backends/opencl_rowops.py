"""OpenCL launch of the row ops: plan (memoised), build through the reduction backend's
program cache, bind buffers, enqueue. numpy in -> numpy out; pyopencl arrays stay on
their queue.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

import pyopencl as cl
import pyopencl.array as cla

from ..plan import UnsupportedOnDevice
from ..plan_rowops import RowForce, RowPlan, RowProblem, plan_row
from . import cl_host as host_buffers
from .opencl import caps_of, get_kernel

_plans: dict[tuple, tuple[RowPlan, list[cl.Kernel]]] = {}
_PLAN_CACHE_LIMIT = 512
# clSetKernelArg on a shared cl_kernel is not thread-safe: set-args + enqueue run under one
# lock (the kernels come from the reduction backend's shared cache).
_launch_lock = threading.Lock()


def clear_caches() -> None:
    """Forget the memoised row-op plans and the kernels they hold."""
    _plans.clear()


def _kernel_runs_plan(kernel, device, p: RowPlan) -> dict | None:
    """None when the compiled kernel runs ``p`` as planned, else caps fields to re-plan with."""
    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    if limit < p.wg_size:
        return {"max_work_group_size": int(limit)}  # register pressure lowered the limit
    if p.sg_size and p.reqd_sg == "none":
        actual = kernel.get_sub_group_info(device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                           (p.wg_size,))
        if actual != p.sg_size:
            return {"subgroup_sizes": (int(actual),)}
    return None


def plan_for(queue: cl.CommandQueue, problem: RowProblem, force: RowForce | None = None):
    """(RowPlan, kernels: one per pass) for the queue's device, re-planned once if the compiled kernel
    cannot run the plan (work-group limit below the plan's, or another sub-group width)."""
    key = (queue.context.int_ptr, queue.device.int_ptr, problem, force)
    hit = _plans.get(key)
    if hit is not None:
        return hit  # a repeated call: no probe, plan or build lookup
    p = None
    caps = caps_of(queue.device)
    for attempt in range(2):
        if p is None:
            p = plan_row(caps, problem, force)
        options = [launch.options for launch in p.passes]
        kernels = [get_kernel(queue.context, queue.device, p.kernel_file, p.entry, o) for o in options]
        fix = None
        for kernel in kernels:
            fix = fix or _kernel_runs_plan(kernel, queue.device, p)
        if fix is None:
            if len(_plans) > _PLAN_CACHE_LIMIT:
                _plans.clear()
            _plans[key] = (p, kernels)
            return p, kernels
        if force and force.wg_size and "max_work_group_size" in fix:
            # e.g. rusticl on llvmpipe: CL_DEVICE_MAX_WORK_GROUP_SIZE 1024, a built kernel 32
            raise UnsupportedOnDevice(f"forced wg_size={force.wg_size}: the compiled {p.kernel_file} allows at most "
                                      f"{fix['max_work_group_size']} work-items per group on {queue.device.name!r}")
        if attempt == 1 or (force and force.wg_size):
            break
        caps = dataclasses.replace(caps, **fix)
        p = None
    raise RuntimeError(f"the compiled {p.kernel_file} cannot run plan {p} on {queue.device.name!r}")


def runnable_caps(queue: cl.CommandQueue):
    """The device's caps with ``max_work_group_size`` lowered to what a built row kernel
    allows (llvmpipe: 32 of the 1024 the device reports), for listing forced variants."""
    caps = caps_of(queue.device)
    p, kernels = plan_for(queue, RowProblem("softmax", 1, 4096, "float32"))
    limit = min(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, queue.device) for k in kernels)
    return dataclasses.replace(caps, max_work_group_size=min(caps.max_work_group_size, int(limit)))


def is_cl_array(x) -> bool:
    return isinstance(x, cla.Array)


def run(queue: cl.CommandQueue, problem: RowProblem, src, *, weight=None, bias=None, eps: float = 0.0,
        force: RowForce | None = None):
    """Run one row op over ``src`` (``(rows, row_len)``, C-contiguous numpy or pyopencl array).

    Returns ``(out, stats)`` as pyopencl arrays on ``queue``: ``out`` is the transformed rows
    (None for moments); ``stats`` is per-row float statistics: ``(2, rows)`` mean/var for
    moments, ``(rows,)`` absmax for absmax_scale, scale for quantize_int8, else None.

    A numpy ``src`` is read in place where the device shares host memory (``cl_host``: CPU
    devices, Mali, Adreno), as the reductions read it; then this waits for the kernels and
    releases the wrapping buffer before returning, so no device object outlives the call's
    hold on ``src``. Elsewhere it is copied.
    """
    p, kernels = plan_for(queue, problem, force)
    ctx = queue.context
    rows, k = problem.rows, problem.row_len
    wrapped = None
    if isinstance(src, np.ndarray):
        src = np.ascontiguousarray(src)
        src_buf, in_off, in_place = host_buffers.input_buffer(ctx, queue.device, src)
        wrapped = src_buf if in_place else None
    else:
        src_buf, in_off = src.base_data, src.offset // src.dtype.itemsize
    acc = np.dtype(p.acc_dtype)
    family = p.kernel_file
    out = None if problem.op == "moments" else cla.empty(queue, (rows, k), np.dtype(p.out_dtype))
    stats = None
    if problem.op == "moments":
        stats = cla.empty(queue, (2, rows), acc)
    elif family == "row_scale.cl":
        stats = cla.empty(queue, (rows,), acc)
    dummy = None

    def buf(a):
        nonlocal dummy
        if a is not None:
            return a.base_data
        if dummy is None:
            dummy = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
        return dummy

    def dev(a):
        if a is None or is_cl_array(a):
            return a
        return cla.to_device(queue, np.ascontiguousarray(a, dtype=acc))

    if family == "row_scan.cl":
        _finish(_run_scan(queue, p, kernels, src_buf, in_off, out), wrapped)
        return out, None
    # (rows * split, 2) partial statistics between the two launches of a split plan
    partials = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, rows * p.split * 2 * acc.itemsize) if p.split > 1 else None
    out_off = np.uint64(0 if out is None else out.offset // out.dtype.itemsize)
    args = [src_buf, np.uint64(in_off), buf(out), out_off]
    if family == "row_norm.cl":
        w, b = dev(weight), dev(bias)
        args += [buf(w), buf(b), buf(stats)]
    elif family == "row_scale.cl":
        args += [buf(stats)]
    args += [partials or buf(None), np.uint64(rows), np.uint64(k), np.uint64(p.scalars[2][2])]
    if family == "row_norm.cl":
        args.append(acc.type(eps))
    with _launch_lock:
        for launch, kernel in zip(p.passes, kernels):
            kernel.set_args(*args)
            event = cl.enqueue_nd_range_kernel(queue, kernel, (launch.global_size,), (launch.local_size,))
    _finish(event, wrapped)
    return out, stats


def _finish(event, wrapped) -> None:
    """A wrapped numpy input: wait for the last kernel (an in-order queue: all of them), then
    release the buffer, so nothing reads the caller's memory after the call."""
    if wrapped is not None:
        event.wait()
        wrapped.release()


def _run_scan(queue, p: RowPlan, kernels, src_buf, in_off: int, out):
    """Enqueue a scan's passes (the last one's event returned); split rows get (rows, split)
    partials and carries buffers."""
    acc = np.dtype(p.acc_dtype)
    size = max(1, p.scalars[0][2] * p.split) * acc.itemsize
    mf = cl.mem_flags
    partials = cl.Buffer(queue.context, mf.READ_WRITE, size) if p.split > 1 else None
    carries = cl.Buffer(queue.context, mf.READ_WRITE, size) if p.split > 1 else None
    buffers = {"input": (src_buf, in_off), "output": (out.base_data, out.offset // out.dtype.itemsize),
               "partials": (partials, 0), "carries": (carries, 0)}
    with _launch_lock:
        for launch, kernel in zip(p.passes, kernels):
            (src_buf, src_off), (dst_buf, dst_off) = buffers[launch.reads], buffers[launch.writes]
            kernel.set_args(src_buf, np.uint64(src_off), dst_buf, np.uint64(dst_off), np.uint64(launch.n_rows),
                            np.uint64(launch.row_len), np.uint64(launch.chunk_len), carries or dst_buf)
            event = cl.enqueue_nd_range_kernel(queue, kernel, (launch.global_size,), (launch.local_size,))
    return event
