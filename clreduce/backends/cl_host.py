"""Numpy inputs on OpenCL devices: wrap in place where memory is shared (pieces: cl_chunks).

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

import numpy as np
import pyopencl as cl

from .. import config

PAGE = 4096
SIZE_MULTIPLE = 64
# Wrapping has a fixed cost (creating a USE_HOST_PTR buffer: ~17 us on the Intel runtime,
# ~7 us on PoCL, measured on a loaded 2-core EPYC) where a copy costs ~2.5 us per KB on
# Intel and ~0.13 us per KB on PoCL: below this size the copy is as cheap or cheaper, and
# its memory does not matter.
ZERO_COPY_MIN_BYTES = 16 * 1024

_shared: dict[int, bool] = {}


def _wrapped_bytes(nbytes: int) -> int:
    """Bytes a wrapped region spans: ``nbytes`` up to the next multiple of SIZE_MULTIPLE."""
    return -(-nbytes // SIZE_MULTIPLE) * SIZE_MULTIPLE


class InputTooLarge(MemoryError):
    """An input exceeds one device allocation and cannot be cut into pieces that fit."""


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
            total = _wrapped_bytes(lead + src.nbytes)
            region = (ctypes.c_char * total).from_address(addr - lead)
            return cl.Buffer(ctx, mf.READ_ONLY | mf.USE_HOST_PTR, hostbuf=region), lead // src.itemsize, True
    return cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src), 0, False


def output_array(shape: tuple, dtype) -> np.ndarray:
    """An empty C-contiguous numpy array for a result that ``output_buffer`` may wrap in
    place: it starts on a page boundary and its allocation reaches the next multiple of
    SIZE_MULTIPLE bytes (Intel's runtime writes in place only then, cf. ``input_buffer``).
    A view of a slightly larger allocation, as numpy's own aligned-allocation idiom."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < ZERO_COPY_MIN_BYTES:
        return np.empty(shape, dtype)
    raw = np.empty(_wrapped_bytes(nbytes) + PAGE, np.uint8)
    lead = (-raw.ctypes.data) % PAGE
    return raw[lead:lead + nbytes].view(dtype).reshape(shape)


def output_buffer(ctx: cl.Context, device: cl.Device, host: np.ndarray) -> cl.Buffer | None:
    """``host`` (from ``output_array``) wrapped for the kernels to write in place, where the
    device shares host memory (the results' read-back copy had been up to a third of a row
    op's call on CPU devices); None where it should be a device buffer and a copy. The
    caller reads it through ``read_output`` and releases it."""
    if not (host.nbytes >= ZERO_COPY_MIN_BYTES and host.flags.c_contiguous and shares_host_memory(device)
            and config.zero_copy() and host.ctypes.data % PAGE == 0):
        return None
    region = (ctypes.c_char * _wrapped_bytes(host.nbytes)).from_address(host.ctypes.data)
    return cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=region)


def dest_buffer(ctx: cl.Context, device: cl.Device, dest: np.ndarray) -> cl.Buffer | None:
    """The caller's numpy ``out=`` (C-contiguous, writeable: ``out_dest.numpy_dest``) wrapped
    for the kernels to write in place where the device shares host memory, else None (the
    results are then read straight into it). Exactly its own bytes: unlike ``output_array``'s
    results, the memory past its end is not ours, and a runtime that keeps a device-side copy
    (Intel's, for a pointer off a 4096-byte boundary) writes the whole region back when it is
    mapped. Read through ``read_output``, then released."""
    if not (dest.nbytes >= ZERO_COPY_MIN_BYTES and shares_host_memory(device) and config.zero_copy()
            and dest.ctypes.data % dest.itemsize == 0):
        return None
    region = (ctypes.c_char * dest.nbytes).from_address(dest.ctypes.data)
    return cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=region)


def read_output(queue: cl.CommandQueue, buf: cl.Buffer, host: np.ndarray, wait_for) -> None:
    """Make a wrapped result's writes visible in ``host`` (blocking): map it for reading,
    which OpenCL requires of a USE_HOST_PTR buffer (a runtime may have kept a device-side
    copy; on CPU runtimes with the pointer used in place the map is free), then unmap."""
    mapped, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, (host.nbytes,), np.uint8,
                                      wait_for=wait_for, is_blocking=True)
    mapped.base.release(queue).wait()


def base_order(array: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(view, axes)``: a C-contiguous view of ``array`` with its axes permuted, and the
    reduced ``axes`` renumbered for it, when ``array`` is a transpose of a C-contiguous
    array (``x.T``, Fortran order) and both the kept and the reduced axes stay in their
    order (so the flat result, and argmax's index over several axes, are unchanged); else
    ``(array, axes)``.

    Gathering such a view into C order first cost more than the reduction: numpy copies
    ``x.T`` of a (1024, 8192) float32 array at ~0.01 GB/s (every element a 32 KB stride
    away), where the kernels read ``x`` itself along its leading axis at memory speed.
    """
    strides = array.strides
    if array.ndim < 2 or any(s <= 0 for s, n in zip(strides, array.shape) if n > 1):
        return array, axes
    order = sorted(range(array.ndim), key=lambda i: (-strides[i] if array.shape[i] > 1 else 0, i))
    view = array.transpose(order)
    if not view.flags.c_contiguous:
        return array, axes
    kept = [a for a in order if a not in axes]
    reduced = [a for a in order if a in axes]
    if kept != sorted(kept) or reduced != sorted(reduced):
        # the flat result (kept order) or the order of elements within a reduced row
        # (argmax's flat index over several axes) would change
        return array, axes
    return view, tuple(sorted(order.index(a) for a in axes))
