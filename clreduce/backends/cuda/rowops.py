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
from .. import row_args
from ..out_dest import torch_dest
from .launch import get_kernel
from .probe import probe_device

_plans = LRU(lambda: 4 * config.cache_size())
_ZERO = np.uint64(0)


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

    p, kernels = plan_for(src.device.id, problem, force)
    acc = np.dtype(p.acc_dtype)
    param = row_args.param_dtype(p, problem)
    sizes = row_args.buffer_bytes(p, problem)
    if sizes["output"] and out is None:
        out = cupy.empty((problem.rows, problem.row_len), np.dtype(p.out_dtype))
    shape = row_args.stats_shape(problem)
    stats = None if shape is None else cupy.empty(shape, acc)
    buffers = {"input": src, "output": out if sizes["output"] else None, "stats": stats,
               "weight": None if weight is None else cupy.ascontiguousarray(cupy.asarray(weight), dtype=param),
               "bias": None if bias is None else cupy.ascontiguousarray(cupy.asarray(bias), dtype=param)}
    for name in ("partials", "carries"):
        buffers[name] = cupy.empty(sizes[name], np.uint8) if sizes[name] else None
    dummy = cupy.empty(2, acc)  # for the buffers the plan does not use

    def arg(a):
        if type(a) is not str:
            return a
        if a == row_args.IN_OFFSET:
            return _ZERO  # a cupy array's pointer includes its offset
        return dummy if buffers.get(a) is None else buffers[a]

    for arg_list, kernel, launch in zip(row_args.kernel_args(p, problem, eps), kernels, p.passes):
        kernel((launch.global_size // launch.local_size,), (launch.local_size,), tuple(map(arg, arg_list)))
    return (out if sizes["output"] else None), stats


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


# ---- CUDA torch tensors: a direct path ------------------------------------------------------------
# The general path moves a torch tensor through DLPack both ways; torch's __dlpack__(stream=)
# handshake (current streams, device indices, an event between streams) cost ~150-300 us of
# Python per call on an H100 box, where the kernel of a 100 MB row op takes ~50 us: the public
# call ran at a third of the kernel's bandwidth. Here a contiguous CUDA tensor is viewed
# as a cupy array over its own memory, the result is a torch tensor from torch's allocator,
# and the kernels run on torch's current stream: the same plans and kernels, no copies.
_TORCH_FLOATS = {"torch.float16": "float16", "torch.float32": "float32", "torch.float64": "float64"}
_streams = LRU(lambda: 64)


def _cupy_view(t, shape, dtype):
    import cupy

    mem = cupy.cuda.UnownedMemory(t.data_ptr(), t.numel() * t.element_size(), t, t.device.index)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(mem, 0))


def _row_param_ok(p, k: int, device) -> bool:
    """None, or a plain float CUDA tensor of shape (k,) on ``device`` (else the general path
    decides, and says what is wrong)."""
    return p is None or (type(p).__module__ == "torch" and p.is_cuda and p.device == device and
                         str(p.dtype) in _TORCH_FLOATS and tuple(p.shape) == (k,))


def _row_param_view(p, acc_torch):
    """A weight / bias tensor (``_row_param_ok``) as the kernel reads it: ``acc_torch``
    (ACC_T, or float16 for a ``params_half`` problem), contiguous."""
    if p is None:
        return None
    # resolve_neg: a negated view's memory holds the unnegated values (the kernel reads memory)
    return p.detach().resolve_neg().to(acc_torch).contiguous()


def torch_rows(op: str, x, axis, weight=None, bias=None, eps: float = 0.0, force: RowForce | None = None,
               dest=None):
    """softmax / log_softmax / rms_norm / layer_norm of a C-contiguous CUDA torch tensor along
    its last axis, as a new tensor on the same device and stream; None when ``x`` (or a
    weight / bias) is anything else, so the general path (and its errors) takes the call.
    ``dest`` (the caller's ``out=``, unchecked) receives the rows where it is a tensor of the
    result's shape and dtype that ``out_dest.torch_dest`` allows; else the caller copies."""
    dtype = _TORCH_FLOATS.get(str(x.dtype))
    if dtype is None or not x.is_cuda or x.dim() == 0 or not isinstance(axis, int) \
            or axis not in (-1, x.dim() - 1) or x.numel() == 0 or not x.is_contiguous() or x.is_neg():
        return None
    import cupy
    import torch

    k = x.shape[-1]
    if not (_row_param_ok(weight, k, x.device) and _row_param_ok(bias, k, x.device)):
        return None
    from ...rowops import params_are_half

    half = params_are_half(x.dtype, [p for p in (weight, bias) if p is not None])
    param_torch = torch.float16 if half else torch.float64 if dtype == "float64" else torch.float32
    w, b = _row_param_view(weight, param_torch), _row_param_view(bias, param_torch)
    rows = x.numel() // k
    problem = RowProblem(op=op, rows=rows, row_len=k, dtype=dtype, weight=w is not None, bias=b is not None,
                         params_half=half)
    if (isinstance(dest, torch.Tensor) and dest.dtype == x.dtype and dest.shape == x.shape
            and torch_dest(dest, x, (weight, bias))):
        result = dest
    else:
        result = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    index = x.device.index
    handle = int(torch.cuda.current_stream(x.device).cuda_stream)
    stream = _streams.get((index, handle))
    if stream is None:
        stream = _streams.put((index, handle), cupy.cuda.ExternalStream(handle, index))
    np_dtype = np.dtype(dtype)
    param = np.dtype(str(param_torch).replace("torch.", ""))
    with cupy.cuda.Device(index), stream:
        run(problem, _cupy_view(x, (rows, k), np_dtype),
            weight=None if w is None else _cupy_view(w, (k,), param),
            bias=None if b is None else _cupy_view(b, (k,), param),
            eps=eps, force=force, out=_cupy_view(result, (rows, k), np_dtype))
    return result
