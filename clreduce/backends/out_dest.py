"""Whether a row op may write its rows straight into the caller's ``out=`` array.

The row ops' results are as large as their input, so writing them into a new array and then
copying that into ``out=`` moved the rows twice more than needed: on an H200, float16
``rms_norm`` of 64 x 4194304 with ``out=`` ran at 1566 GB/s where the same call without it
ran at ~2470 (tools/bench_out.py, benchmarks/out_direct_h200_2026-11-28). The launchers write
into ``out=`` itself where that gives the same answer as the copy:

* it is C-contiguous, on the input's device (OpenCL: context; a pyopencl array starting at
  its buffer's first byte, since the kernels take no output offset);
* it shares no memory with the input, weight or bias: the kernels of split and uncached
  rows read a row again after others have written (in place, ``softmax(x, out=x)``, a write
  could land before a read of the same element by another work-group). Such calls keep the
  copy, as numpy buffers overlapping operands;
* a numpy ``out=`` must also be writeable (numpy raises for a read-only ``out=``, and the
  copy path does too). Where the device shares host memory it is wrapped in place, its own
  bytes exactly (``cl_host.dest_buffer``); elsewhere the results are read straight into it;
* a torch ``out=`` that requires grad keeps the copy too (``Tensor.copy_`` raises there, as
  torch's own ``out=`` does).

The dtype, shape and kind of ``out=`` are checked before (``rowops._check_out``, or the fast
path's signature, which only holds calls whose ``out=`` passed that check). Importing this
module imports no GPU library.
"""

from __future__ import annotations


def _span(ptr: int, shape, strides, itemsize: int) -> tuple[int, int]:
    """[first, last + 1) bytes an array of these byte strides touches (empty: (ptr, ptr))."""
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if n == 0:
            return ptr, ptr
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + itemsize


def _apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] == a[1] or b[0] == b[1] or a[1] <= b[0] or b[1] <= a[0]


def _cupy_span(a) -> tuple[int, int]:
    if a.flags.c_contiguous:  # every learned call's input and out=: no walk over the strides
        return a.data.ptr, a.data.ptr + a.nbytes
    return _span(a.data.ptr, a.shape, a.strides, a.itemsize)


def _torch_span(t) -> tuple[int, int]:
    if t.is_contiguous():
        return t.data_ptr(), t.data_ptr() + t.nbytes
    item = t.element_size()
    return _span(t.data_ptr(), t.shape, [s * item for s in t.stride()], item)


def cupy_dest(dest, x, params, device_id: int) -> bool:
    """``dest`` (a cupy array of the result's shape and dtype) may take the rows of ``x``."""
    if not dest.flags.c_contiguous or dest.device.id != device_id:
        return False
    span = _cupy_span(dest)
    return all(p is None or _apart(span, _cupy_span(p)) for p in (x, *params))


def torch_dest(dest, t, params) -> bool:
    """``dest`` (a torch tensor of the result's shape and dtype) may take the rows of ``t``.
    Runs on every learned call with out=: contiguous tensors take their span from
    ``data_ptr`` and ``nbytes`` alone (through the strides it cost ~4 us a call)."""
    if dest.requires_grad or not dest.is_contiguous() or dest.get_device() != t.get_device() or dest.is_neg():
        return False
    span = _torch_span(dest)
    return all(p is None or _apart(span, _torch_span(p)) for p in (t, *params))


def cl_dest(dest, x, params) -> bool:
    """``dest`` (a pyopencl array of the result's shape and dtype) may take the rows of the
    pyopencl array ``x``; numpy weights (uploaded per call) never overlap it."""
    import pyopencl as cl

    if not dest.flags.c_contiguous or dest.offset != 0 or dest.context != x.context:
        return False
    buf = dest.base_data
    span = (0, dest.nbytes)
    for p in (x, *params):
        if p is None or not hasattr(p, "base_data"):
            continue
        if p.base_data == buf:
            if not _apart(span, _span(p.offset, p.shape, p.strides, p.dtype.itemsize)):
                return False
        elif (buf.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is not None
              or p.base_data.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is not None):
            return False  # a sub-buffer: it may alias the other buffer; keep the copy
    return True


def numpy_dest(dest, x, params) -> bool:
    """``dest`` (a numpy array of the result's shape and dtype) may take the rows of the numpy
    array ``x``: C-contiguous, writeable, and sharing no memory with the input, weight or
    bias (``np.may_share_memory``: bounds only, so a doubt keeps the copy)."""
    import numpy as np

    if not (isinstance(dest, np.ndarray) and dest.flags.c_contiguous and dest.flags.writeable):
        return False
    return all(not isinstance(p, np.ndarray) or not np.may_share_memory(dest, p) for p in (x, *params))
