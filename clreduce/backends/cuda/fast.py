"""Ready launchers: the CUDA half of the per-call fast path (clreduce/fastpath.py).

The slow path wraps a torch tensor as a cupy array (DLPack), makes torch's stream CuPy's
current one, allocates from CuPy's pool, launches, and wraps the result back into torch
(DLPack again): ~60-110 us per call at 1x128, twice a cupy array's cost for torch input.
A launcher for a learned signature does only what the kernels need:

* cupy input: allocate the output with ``cupy.empty`` (CuPy's pool, current stream),
  launch each pass's cached ``cupy.cuda.Function`` on CuPy's current stream (as the slow
  path), return the cupy array;
* CUDA torch input: read the stream from torch (its current stream on the tensor's
  device), allocate the output with ``torch.empty`` (torch's caching allocator, same
  stream), pass both data pointers as 64-bit kernel arguments, return the tensor -- no
  DLPack capsule, no CuPy array object, no stream context.

Both switch CUDA's current device only when it is not the array's. The launcher holds the
backend's ``_Launcher`` (functions, grids, scalars); the fast path's LRU bounds how many.
Explicit ``stream=`` calls and numpy inputs stay on the slow path.

Importing this module imports no GPU library; nothing runs until a launcher is built.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...lru import LRU
from ...plan import Problem

_BUFFERS = {"input": 0, "output": 1, "partials": 2}
_ZERO = np.uint64(0)


class _StreamHandle:
    """What ``cupy.cuda.Function.__call__`` reads of a stream: its ``ptr``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr


_handles = LRU(64)  # raw stream pointer -> handle (streams are few; the bound is a guard)


def _handle(ptr: int) -> _StreamHandle:
    handle = _handles.get_unlocked(ptr)  # int keys: no lock needed
    if handle is None:
        handle = _handles.put(ptr, _StreamHandle(ptr))
    return handle


def _torch_stream_reader(torch):
    """A function device index -> raw current-stream pointer; torch's private accessor
    (~0.2 us) where this torch has it, else ``torch.cuda.current_stream`` (~2 us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class Launcher:
    """One learned signature on CUDA (see the module doc). ``steps`` are the backend
    launcher's ``(function, grid, block, reads, writes, scalars)`` with buffer names turned
    into indices of ``(input, output, partials)``."""

    __slots__ = ("base", "steps", "device_id", "out_shape", "out_dtype", "partials_bytes", "cupy", "torch",
                 "torch_dtype", "torch_device", "stream_of", "get_device")

    def __init__(self, base, cupy, device_id: int, out_shape: tuple, torch=None):
        self.base = base  # the backend's _Launcher (kept alive while this entry lives)
        self.steps = tuple((fn, grid, block, _BUFFERS[reads], _BUFFERS[writes], scalars)
                           for fn, grid, block, reads, writes, scalars in base.steps)
        self.device_id = device_id
        self.out_shape = out_shape
        self.out_dtype = base.out_dtype
        self.partials_bytes = base.partials_bytes
        self.cupy = cupy
        self.get_device = cupy.cuda.runtime.getDevice
        self.torch = torch
        if torch is not None:
            self.torch_dtype = torch.bool if self.out_dtype == np.bool_ else getattr(torch, self.out_dtype.name)
            self.torch_device = torch.device("cuda", device_id)
            self.stream_of = _torch_stream_reader(torch)

    def _launch(self, buffers, stream=None):
        for fn, grid, block, reads, writes, scalars in self.steps:
            fn(grid, block, (buffers[reads], _ZERO, buffers[writes], _ZERO) + scalars, 0, stream)

    def cupy_array(self, a, where):
        """A cupy array in, a cupy array of the result's shape out, on CuPy's current stream."""
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                return self.cupy_array(a, where)
        cupy = self.cupy
        out = cupy.empty(self.out_shape, self.out_dtype)
        partials = cupy.empty(self.partials_bytes, np.uint8) if self.partials_bytes else None
        self._launch((a, out, partials))
        return out

    def torch_tensor(self, t, where):
        """A CUDA tensor in, a tensor of the result's shape out, on torch's current stream."""
        torch = self.torch
        stream = _handle(self.stream_of(self.device_id))
        out = torch.empty(self.out_shape, dtype=self.torch_dtype, device=self.torch_device)
        buffers = (np.uint64(t.data_ptr()), np.uint64(out.data_ptr()), None)
        if self.partials_bytes:
            partials = torch.empty(self.partials_bytes, dtype=torch.uint8, device=self.torch_device)
            buffers = buffers[:2] + (np.uint64(partials.data_ptr()),)
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                self._launch(buffers, stream)
        else:
            self._launch(buffers, stream)
        return out


def fast_launcher(a, native, problem: Problem, force, out_shape: tuple, where: dict, expected=None):
    """A launcher replaying the CUDA backend's reduce for calls with this signature, or None
    (numpy input, an explicit stream, anything but a cupy array or a CUDA torch tensor).

    Before it is handed out it runs once on ``a`` and must give ``expected`` (the full
    path's device result) bit for bit: the kernels and plan are the same, so any difference
    is a launcher bug, and the signature then stays on the full path (with a warning).
    """
    from . import _launcher, _merged_force

    if where.get("stream") is not None:
        return None
    module = type(a).__module__.partition(".")[0]
    if module == "cupy" and native is a:
        torch = None
    elif module == "torch" and getattr(a, "is_cuda", False):
        import torch
    else:
        return None
    import cupy

    device_id = native.device.id
    base = _launcher(device_id, problem, _merged_force(force))
    if getattr(base, "words", 1) != 1:
        return None  # exact two-word integer sums are rounded on the host: the full path's work
    launcher = Launcher(base, cupy, device_id, out_shape, torch)
    launch = launcher.cupy_array if torch is None else launcher.torch_tensor
    if expected is not None and not _same_result(launch(a, where), expected, cupy, device_id):
        warnings.warn(f"clreduce's CUDA fast path answered differently from the full path for "
                      f"{problem} (a bug: please report it); these calls keep the full path",
                      RuntimeWarning, stacklevel=2)
        return None
    return launch


def _same_result(got, expected, cupy, device_id: int) -> bool:
    """Bit-for-bit equal values (NaN where NaN), dtype and shape, on the host."""
    with cupy.cuda.Device(device_id):
        cupy.cuda.Device(device_id).synchronize()  # the two results ran on different streams
        want = cupy.asnumpy(expected)
    have = got.cpu().numpy() if hasattr(got, "cpu") else cupy.asnumpy(got)
    if have.dtype != want.dtype or have.shape != want.shape:
        return False
    return bool(np.array_equal(have, want, equal_nan=have.dtype.kind in "fc"))
