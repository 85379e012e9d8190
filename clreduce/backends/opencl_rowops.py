"""OpenCL launch of the row ops: plan (memoised), build through the reduction backend's
program cache, bind buffers, enqueue. numpy in -> numpy out; pyopencl arrays stay on
their queue.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

import pyopencl as cl
import pyopencl.array as cla

from ..plan import UnsupportedOnDevice
from ..plan_rowops import RowForce, RowPlan, RowProblem, plan_row
from . import cl_host as host_buffers
from . import cl_args, cl_transfer, row_args
from . import cl_fallback as fallback
from .. import config
from ..lru import LRU
from . import opencl
from .opencl import _cached_kernel, caps_of

# (context, device, problem, force) -> (RowPlan, kernels): bounded like the reductions' plan
# cache, and dropped with it when a program it uses is evicted or its context released (a
# plain dict here kept evicted programs, and so their contexts, alive up to 512 plans).
_plans = LRU(lambda: 4 * config.cache_size())
opencl.plan_cache_listeners.append(_plans.discard_if)


def clear_caches() -> None:
    """Forget the memoised row-op plans, the kernels they hold and the fast path's row
    launchers (which hold plans too)."""
    from .. import fastpath

    _plans.clear()
    fastpath.discard_plans(lambda _key, value: isinstance(value[0], RowPlan))


def _kernel_runs_plan(kernel, device, p: RowPlan) -> dict | None:
    """None when the compiled kernel runs ``p`` as planned, else caps fields to re-plan with."""
    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    if limit < p.wg_size:
        return {"max_work_group_size": int(limit)}  # register pressure lowered the limit
    if p.sg_size and p.reqd_sg == "none" and p.sg_mode != "shuffle_ptx":
        # Without a way to request a width, the compiler picks it: check it is the one planned.
        # (PTX warps are 32 wide by the hardware; NVIDIA's driver has no sub-group query and
        # answers clGetKernelSubGroupInfo with CL_INVALID_OPERATION, as opencl._kernel_fits knows.)
        actual = kernel.get_sub_group_info(device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                           (p.wg_size,))
        if actual != p.sg_size:
            return {"subgroup_sizes": (int(actual),)}
    return None


class RowVariantFallbackWarning(RuntimeWarning):
    """A row-op kernel variant failed to build; clreduce runs the rows by another plan."""


def plan_for(queue: cl.CommandQueue, problem: RowProblem, force: RowForce | None = None):
    """(RowPlan, kernels: one ``opencl._CachedKernel`` per pass) for the queue's device,
    re-planned once if the compiled kernel cannot run the plan (work-group limit below the
    plan's, or another sub-group width).

    A variant the driver cannot build falls back as the reductions do (cl_fallback.py): a
    sub-group mode moves down built-in -> shuffle -> local, is remembered as bad for the
    device for the rest of the process (the reductions then avoid it too), and warns once;
    an unforced CPU_PASSES plan (vector types) falls back to the plan a forced cache gives,
    with a ``RowVariantFallbackWarning``. A forced sub-group mode or cache that fails to
    build raises ``KernelBuildError``.
    """
    key = (queue.context.int_ptr, queue.device.int_ptr, problem, force)
    hit = _plans.get(key)
    if hit is not None:
        return hit  # a repeated call: no probe, plan or build lookup
    caps = caps_of(queue.device)
    user_mode = force is not None and force.sg_mode is not None
    attempt = force or RowForce()
    for _ in range(4):  # at most: two sub-group modes down, one CPU_PASSES fallback, with margin
        attempt = fallback.avoid_bad_modes(caps, problem, attempt, user_mode, planner=plan_row)
        try:
            return _plans.put(key, _plan_and_build(queue, caps, problem, attempt))
        except opencl.KernelBuildError as exc:
            p = plan_row(caps, problem, attempt)
            if not user_mode and fallback.can_fall_back(p.sg_mode):
                fallback.mark_bad(caps, p.sg_mode, exc.log, "failed to build")
                continue
            if force is None and dict(p.defines).get("CPU_PASSES") == "1":
                attempt = dataclasses.replace(attempt, cache="registers" if _fits_registers(caps, problem)
                                              else "none")
                warnings.warn(f"clreduce: {problem.op}'s vector walk (CPU_PASSES) failed to build on "
                              f"{queue.device.name.strip()!r}; running these rows with cache={attempt.cache!r}. "
                              f"{str(exc)[:400]}", RowVariantFallbackWarning, stacklevel=3)
                continue
            raise
    raise RuntimeError(f"no buildable plan for {problem} on {queue.device.name!r}")


def _fits_registers(caps, problem: RowProblem) -> bool:
    try:
        plan_row(caps, problem, RowForce(cache="registers"))
    except UnsupportedOnDevice:
        return False
    return True


def _plan_and_build(queue: cl.CommandQueue, caps, problem: RowProblem, force: RowForce):
    p = None
    for attempt in range(2):
        if p is None:
            p = plan_row(caps, problem, force)
        options = [launch.options for launch in p.passes]
        kernels = [_cached_kernel(queue.context, queue.device, p.kernel_file, p.entry, o) for o in options]
        fix = None
        for cached in kernels:
            fix = fix or _kernel_runs_plan(cached.kernel, queue.device, p)
        if fix is None:
            return p, kernels
        if force.wg_size and "max_work_group_size" in fix:
            # e.g. rusticl on llvmpipe: CL_DEVICE_MAX_WORK_GROUP_SIZE 1024, a built kernel 32
            raise UnsupportedOnDevice(f"forced wg_size={force.wg_size}: the compiled {p.kernel_file} allows at most "
                                      f"{fix['max_work_group_size']} work-items per group on {queue.device.name!r}")
        if attempt == 1 or force.wg_size:
            break
        caps = dataclasses.replace(caps, **fix)
        p = None
    raise RuntimeError(f"the compiled {p.kernel_file} cannot run plan {p} on {queue.device.name!r}")


def runnable_caps(queue: cl.CommandQueue):
    """The device's caps with ``max_work_group_size`` lowered to what a built row kernel
    allows (llvmpipe: 32 of the 1024 the device reports), for listing forced variants."""
    caps = caps_of(queue.device)
    p, kernels = plan_for(queue, RowProblem("softmax", 1, 4096, "float32"))
    limit = min(c.kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, queue.device) for c in kernels)
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
    wrapped = None
    if isinstance(src, np.ndarray):
        src = np.ascontiguousarray(src)
        src_buf, in_off, in_place = host_buffers.input_buffer(ctx, queue.device, src)
        wrapped = src_buf if in_place else None
    else:
        src_buf, in_off = src.base_data, src.offset // src.dtype.itemsize
    acc = np.dtype(p.acc_dtype)
    sizes = row_args.buffer_bytes(p, problem)
    out = cla.empty(queue, (problem.rows, problem.row_len), np.dtype(p.out_dtype)) if sizes["output"] else None
    shape = row_args.stats_shape(problem)
    stats = None if shape is None else cla.empty(queue, shape, acc)
    buffers = {"input": src_buf, "output": None if out is None else out.base_data,
               "stats": None if stats is None else stats.base_data,
               "weight": param_buffer(queue, weight, row_args.param_dtype(p, problem)),
               "bias": param_buffer(queue, bias, row_args.param_dtype(p, problem))}
    for name in ("partials", "carries"):
        buffers[name] = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, sizes[name]) if sizes[name] else None
    dummy = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)  # for the buffers the plan does not use
    unbind = cl_args.retains_buffers(ctx, queue.device)  # rusticl: see cl_args
    # the first launch waits for what the pyopencl input, weight and bias are still waiting on
    # (opencl.pending_events); the queue orders the rest
    wait_for = opencl.pending_events(src, weight, bias, queue=queue)
    for arg_list, cached, launch in zip(row_args.kernel_args(p, problem, eps), kernels, p.passes):
        args = bind(arg_list, buffers, in_off, dummy)
        with cached.lock:  # set-args + enqueue on a kernel other threads share
            cached.kernel.set_args(*args)
            event = cl.enqueue_nd_range_kernel(queue, cached.kernel, (launch.global_size,), (launch.local_size,),
                                               wait_for=wait_for)
            wait_for = None
            if unbind:
                cl_args.unbind(cached.kernel, cl_args.buffer_indices(args))
    if wrapped is not None:  # wait for the last kernel (an in-order queue: all of them), then let go
        event.wait()
        wrapped.release()
    return out, stats


def bind(arg_list: tuple, buffers: dict, in_offset: int, absent) -> list:
    """``row_args.kernel_args`` of one pass as kernel arguments: buffers by name (``absent``
    where the plan uses none), the input's offset, scalars as they are."""
    args = []
    for arg in arg_list:
        if arg == row_args.IN_OFFSET:
            args.append(np.uint64(in_offset))
        elif type(arg) is str:
            buf = buffers.get(arg)
            args.append(absent if buf is None else buf)
        else:
            args.append(arg)
    return args


def param_buffer(queue: cl.CommandQueue, p, acc: np.dtype):
    """A weight / bias as the kernel reads it (``acc``: ACC_T, or float16 for a
    ``params_half`` problem; contiguous, from element 0): a pyopencl
    array that already is one is bound as it is; anything else (numpy, another dtype, a view
    that starts inside its buffer -- whose offset the kernel would not see) is copied."""
    if p is None:
        return None
    if is_cl_array(p):
        if p.dtype == acc and p.offset == 0 and p.flags.c_contiguous:
            return p.base_data
        p = cl_transfer.to_host(p)
    host = np.ascontiguousarray(p, dtype=acc)
    return cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)


def fast_launcher(queue: cl.CommandQueue, per_call_queue: bool, problem: RowProblem, force: RowForce | None,
                  eps: float, kind: str, rows_shape: tuple, stats_shape: tuple, stats_dtype=None):
    """A ready launcher (its ``host`` or ``device`` method) for calls like one that just ran
    (clreduce/fastpath_rows.py); ``kind``: "host" (numpy) or "opencl" (pyopencl array);
    ``stats_dtype``: the dtype numpy statistics are returned in (None: the kernel's)."""
    from .cl_row_launch import RowLauncher

    launcher = RowLauncher(queue, per_call_queue, problem, force, eps, rows_shape, stats_shape, stats_dtype)
    return launcher.host if kind == "host" else launcher.device
