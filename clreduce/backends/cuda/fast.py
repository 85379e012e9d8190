"""Ready launchers: the CUDA half of the per-call fast path (clreduce/fastpath.py).

The slow path wraps a torch tensor as a cupy array (DLPack), makes torch's stream CuPy's
current one, allocates from CuPy's pool, launches, and wraps the result back into torch
(DLPack again): ~60-110 us per call at 1x128. A launcher for a learned signature does only
what the kernels need:

* the output: ``cupy.ndarray`` (CuPy's pool, current stream) for cupy input,
  ``Tensor.new_empty`` on the input (torch's caching allocator, its device) for CUDA
  torch input;
* the stream: CuPy's current stream pointer, or torch's current raw stream on the
  tensor's device (no stream object, no DLPack capsule, no CuPy array around a tensor);
* the launch: ``cuLaunchKernel`` (``cupy.cuda.driver.launchKernel``) with a kernel
  parameter block made once. ``cupy.cuda.Function.__call__`` re-marshals every argument
  on every call (a Python object per argument, type dispatch, a fresh parameter array);
  here the block is an array of pointers to argument slots that stay put: each call
  writes the input, output and partials pointers into three 64-bit slots and launches.
  The offset and scalar slots are written once. Each thread has its own slots (a ``threading.local``),
  so two threads never write one block.

Both switch CUDA's current device only when it is not the array's; a thread's first call
makes the device's primary context current (cuLaunchKernel needs one; a thread that has
touched no CUDA runtime call has none). The launcher holds the backend's ``_Launcher``
(functions, grids, scalars); the fast path's LRU bounds how many. Explicit ``stream=``
calls and numpy inputs stay on the slow path.

Importing this module imports no GPU library; nothing runs until a launcher is built.
"""

from __future__ import annotations

import ctypes
import threading
import warnings

import numpy as np

from ...plan import Problem

_BUFFERS = {"input": 0, "output": 1, "partials": 2}


def _torch_stream_reader(torch):
    """A function device index -> raw current-stream pointer; torch's private accessor
    (~0.2 us) where this torch has it, else ``torch.cuda.current_stream`` (~2 us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


def _cupy_stream_reader(cupy):
    """A function () -> CuPy's current stream pointer (0: the legacy default stream)."""
    raw = getattr(getattr(cupy.cuda, "stream", None), "get_current_stream_ptr", None)
    if raw is not None:
        return raw
    return lambda: cupy.cuda.get_current_stream().ptr


class _Slots:
    """One thread's parameter blocks: ``buffers`` holds the pointers a call writes;
    ``params[i]`` is the address of pass i's array of argument pointers. A layout names each
    argument: an int is a slot of ``buffers``, an array a constant (offset, scalar)."""

    __slots__ = ("buffers", "blocks", "params")

    def __init__(self, layouts, n_buffers: int):
        self.buffers = (ctypes.c_uint64 * n_buffers)()
        base = ctypes.addressof(self.buffers)
        self.blocks = []
        for layout in layouts:
            pointers = [base + 8 * arg if type(arg) is int else arg.ctypes.data for arg in layout]
            self.blocks.append((ctypes.c_void_p * len(pointers))(*pointers))
        self.params = tuple(ctypes.addressof(b) for b in self.blocks)


class RawLaunch:
    """Passes launched with ``cuLaunchKernel`` from parameter blocks made once per thread:
    ``self(pointers, stream)`` writes the call's buffer pointers into this thread's slots
    and launches every pass on ``stream``. ``passes``: (function, grid, block) each;
    ``layouts``: each pass's arguments (see _Slots). Shared by the reductions' launcher and
    the row ops' (row_fast.py)."""

    __slots__ = ("raw", "layouts", "n_buffers", "device_id", "set_device", "init_context", "launch_kernel", "local")

    def __init__(self, cupy, device_id: int, passes, layouts, n_buffers: int):
        # launch geometry as cuLaunchKernel takes it: (function, gx, gy, gz, bx, by, bz)
        self.raw = tuple((fn.ptr,) + _dim3(grid) + _dim3(block) for fn, grid, block in passes)
        self.layouts, self.n_buffers = tuple(layouts), n_buffers
        self.device_id = device_id
        self.set_device = cupy.cuda.runtime.setDevice
        self.init_context = cupy.cuda.runtime.free  # free(0): the classic "make the context current"
        self.launch_kernel = cupy.cuda.driver.launchKernel
        self.local = threading.local()  # .slots: this thread's _Slots (gone with the thread)

    def _slots(self) -> _Slots:
        """This thread's parameter blocks, made on its first call, when the device's primary
        context is also made current: cuLaunchKernel needs one (CUDA_ERROR_INVALID_CONTEXT),
        and a thread whose other CUDA calls were all served from caches has none. The
        device is already the current one here, so setting it changes nothing else."""
        self.set_device(self.device_id)
        self.init_context(0)
        slots = self.local.slots = _Slots(self.layouts, self.n_buffers)
        return slots

    def __call__(self, pointers: tuple, stream: int):
        try:
            slots = self.local.slots
        except AttributeError:
            slots = self._slots()
        slots.buffers[:len(pointers)] = pointers
        launch = self.launch_kernel
        for (fptr, gx, gy, gz, bx, by, bz), params in zip(self.raw, slots.params):
            launch(fptr, gx, gy, gz, bx, by, bz, 0, stream, params, 0)

    def four(self, first: int, second: int, third: int, fourth: int, stream: int):
        """``self((first, second, third, fourth), stream)`` without the tuple: the row ops'
        lean call (row_fast.RowLauncher.torch_lean), whose other slots stay 0."""
        try:
            slots = self.local.slots
        except AttributeError:
            slots = self._slots()
        buffers = slots.buffers
        buffers[0] = first
        buffers[1] = second
        buffers[2] = third
        buffers[3] = fourth
        launch = self.launch_kernel
        for (fptr, gx, gy, gz, bx, by, bz), params in zip(self.raw, slots.params):
            launch(fptr, gx, gy, gz, bx, by, bz, 0, stream, params, 0)


class Launcher:
    """One learned signature on CUDA (see the module doc). ``steps`` are the backend
    launcher's ``(function, grid, block, reads, writes, scalars)`` with buffer names turned
    into indices of ``(input, output, partials)``."""

    __slots__ = ("base", "device_id", "out_shape", "out_dtype", "partials_bytes", "cupy", "torch", "torch_dtype",
                 "stream_of", "cupy_stream", "get_device", "alloc", "ndarray", "constants", "run", "same_dtype")

    def __init__(self, base, cupy, device_id: int, out_shape: tuple, torch=None):
        self.base = base  # the backend's _Launcher (kept alive while this entry lives)
        # the constants every thread's blocks point at: a zero offset, and each pass's scalars in their own types
        self.constants = tuple((np.zeros(1, np.uint64), tuple(np.array([s]) for s in scalars))
                               for *_, scalars in base.steps)
        # kernel signature: (in, in_offset, out, out_offset, scalars...), see cl_kernels/README.md
        layouts = [(_BUFFERS[reads], zero, _BUFFERS[writes], zero) + scalars
                   for (_, _, _, reads, writes, _), (zero, scalars) in zip(base.steps, self.constants)]
        self.run = RawLaunch(cupy, device_id, [(fn, grid, block) for fn, grid, block, *_ in base.steps], layouts, 3)
        self.device_id = device_id
        self.out_shape = out_shape
        self.out_dtype = base.out_dtype
        self.partials_bytes = base.partials_bytes
        self.cupy = cupy
        self.get_device = cupy.cuda.runtime.getDevice
        self.alloc = cupy.cuda.alloc
        self.ndarray = cupy.ndarray
        self.cupy_stream = _cupy_stream_reader(cupy)
        self.torch = torch
        self.same_dtype = False  # set by fast_launcher: the result's dtype is the input tensor's
        if torch is not None:
            self.torch_dtype = torch_dtype(torch, self.out_dtype)
            self.stream_of = _torch_stream_reader(torch)

    def cupy_array(self, a, where):
        """A cupy array in, a cupy array of the result's shape out, on CuPy's current stream."""
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                return self.cupy_array(a, where)
        out = self.ndarray(self.out_shape, self.out_dtype)
        if self.partials_bytes:
            partials = self.alloc(self.partials_bytes)  # freed (stream-ordered) when this call returns
            self.run((a.data.ptr, out.data.ptr, partials.ptr), self.cupy_stream())
        else:
            self.run((a.data.ptr, out.data.ptr, 0), self.cupy_stream())
        return out

    def torch_tensor(self, t, where):
        """A CUDA tensor in, a tensor of the result's shape out, on torch's current stream."""
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                return self.torch_tensor(t, where)
        torch = self.torch
        stream = self.stream_of(self.device_id)
        # Tensor.new_empty on the input (its device, torch's caching allocator on the current
        # stream, as torch.empty): 5.0 against 6.6 us per call on the H100's host (parsing
        # the device= argument is the difference); without dtype= when the result keeps the
        # input's dtype (mean/max/min/sum of floats), one keyword fewer for torch to parse
        if self.same_dtype:
            out = t.new_empty(self.out_shape)
        else:
            out = t.new_empty(self.out_shape, dtype=self.torch_dtype)
        if self.partials_bytes:
            partials = t.new_empty(self.partials_bytes, dtype=torch.uint8)
            self.run((t.data_ptr(), out.data_ptr(), partials.data_ptr()), stream)
        else:
            self.run((t.data_ptr(), out.data_ptr(), 0), stream)
        return out


def torch_dtype(torch, dtype: np.dtype):
    """The torch dtype of a numpy one (bool, ints, floats)."""
    return torch.bool if dtype == np.bool_ else getattr(torch, dtype.name)


def _dim3(size: tuple) -> tuple:
    return tuple(size) + (1,) * (3 - len(size))


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
    launcher.same_dtype = torch is not None and a.dtype == launcher.torch_dtype
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
