"""CUDA launch of the row ops (softmax, norms, absmax-scale / int8, scans): the plans of
:mod:`clreduce.plan_rowops` made from the CUDA device's caps, the ``cl_kernels`` row families
built by NVRTC behind ``cl_dialect_cuda.h``, launched through CuPy on its current stream.

Arguments are cupy arrays; :mod:`clreduce.rowops` moves the axis and converts kinds.
"""

from __future__ import annotations

import numpy as np

from ... import config
from ...lru import LRU
from ...plan import UnsupportedOnDevice
from ...plan_rowops import RowForce, RowPlan, RowProblem, plan_row
from .launch import get_kernel
from .probe import probe_device

_plans = LRU(lambda: 4 * config.cache_size())


def plan_for(device_id: int, problem: RowProblem, force: RowForce | None = None) -> tuple[RowPlan, list]:
    """(plan, one compiled kernel per pass) for a CUDA device, memoised per process."""
    key = (device_id, problem, force)
    hit = _plans.get(key)
    if hit is not None:
        return hit
    caps = probe_device(device_id)
    p = plan_row(caps, problem, force)
    kernels = []
    for launch in p.passes:
        kernel = get_kernel(device_id, p.kernel_file, p.entry, launch.defines)
        limit = kernel.attributes["max_threads_per_block"]
        if limit < launch.local_size:
            # registers per thread lowered the block limit: re-plan once at that size
            if force is not None and force.wg_size:
                raise UnsupportedOnDevice(f"forced wg_size={force.wg_size}: the compiled {p.kernel_file} allows "
                                          f"{limit} threads per block")
            import dataclasses

            small = dataclasses.replace(caps, max_work_group_size=int(limit))
            p = plan_row(small, problem, force)
            kernels = [get_kernel(device_id, p.kernel_file, p.entry, x.defines) for x in p.passes]
            break
        kernels.append(kernel)
    return _plans.put(key, (p, kernels))


def run(problem: RowProblem, src, *, weight=None, bias=None, eps: float = 0.0, force: RowForce | None = None,
        out=None):
    """Run one row op over the C-contiguous cupy array ``src`` (``(rows, row_len)``) on
    CuPy's current device and stream.

    ``out`` (optional): a C-contiguous cupy array of ``rows * row_len`` elements of the plan's
    output dtype to write the rows into. Returns ``(out, stats)`` as in
    :func:`clreduce.backends.opencl_rowops.run`.
    """
    import cupy

    device_id = src.device.id
    p, kernels = plan_for(device_id, problem, force)
    rows, k = problem.rows, problem.row_len
    acc = np.dtype(p.acc_dtype)
    if problem.op == "moments":
        out, stats = None, cupy.empty((2, rows), acc)
    else:
        if out is None:
            out = cupy.empty((rows, k), np.dtype(p.out_dtype))
        stats = cupy.empty((rows,), acc) if p.kernel_file == "row_scale.cl" else None
    zero = np.uint64(0)
    if p.kernel_file == "row_scan.cl":
        partials = cupy.empty(rows * p.split, acc) if p.split > 1 else None
        carries = cupy.empty(rows * p.split, acc) if p.split > 1 else None
        buffers = {"input": src, "output": out, "partials": partials, "carries": carries}
        for launch, kernel in zip(p.passes, kernels):
            kernel((launch.global_size // launch.local_size,), (launch.local_size,),
                   (buffers[launch.reads], zero, buffers[launch.writes], zero, np.uint64(launch.n_rows),
                    np.uint64(launch.row_len), np.uint64(launch.chunk_len),
                    carries if carries is not None else buffers[launch.writes]))
        return out, None
    dummy = cupy.empty(2, acc)
    partials = cupy.empty(rows * p.split * 2, acc) if p.split > 1 else dummy
    args = [src, zero, out if out is not None else dummy, zero]
    if p.kernel_file == "row_norm.cl":
        w = dummy if weight is None else cupy.ascontiguousarray(cupy.asarray(weight), dtype=acc)
        b = dummy if bias is None else cupy.ascontiguousarray(cupy.asarray(bias), dtype=acc)
        args += [w, b, stats if stats is not None else dummy]
    elif p.kernel_file == "row_scale.cl":
        args.append(stats)
    args += [partials, np.uint64(rows), np.uint64(k), np.uint64(p.scalars[2][2])]
    if p.kernel_file == "row_norm.cl":
        args.append(acc.type(eps))
    args = tuple(args)
    for launch, kernel in zip(p.passes, kernels):
        kernel((launch.global_size // launch.local_size,), (launch.local_size,), args)
    return out, stats


def as_cupy(x):
    """A cupy array for a weight, bias or scale: cupy as it is, a CUDA torch tensor through
    DLPack (no copy), anything else uploaded from numpy."""
    import cupy

    module = type(x).__module__.split(".")[0]
    if module == "cupy":
        return x
    if module == "torch":
        if x.is_cuda:
            return cupy.from_dlpack(x.detach())
        return cupy.asarray(x.detach().numpy())
    return cupy.asarray(np.asarray(x))
