"""Kernels that keep the buffers last bound to them, and letting go of those buffers.

Why: Mesa's rusticl (measured on 23.x/24.x llvmpipe) retains a buffer passed to
``clSetKernelArg`` until that argument is set again, so every cached kernel that ran keeps
its last input, output and scratch buffers alive -- and through them their context. After a
call returns, that means:

* a caller's device array (possibly large) lives on inside our kernel cache after the caller
  dropped it, until the next call that happens to use the same kernel (memory not bounded);
* a wrapped numpy input (``CL_MEM_USE_HOST_PTR``, released at the end of the call) is still
  a live buffer over the caller's memory;
* a pooled buffer (``cl_pool``) reports two references and is never reused;
* the context a caller dropped keeps a reference count above what the caches account for,
  so ``opencl.release_unused_contexts`` cannot release it.

OpenCL captures argument values at enqueue, so binding NULL right after the enqueue changes
nothing for the command, and the driver keeps what the pending command needs on its own.
Other implementations (Intel's CPU runtime, PoCL, NVIDIA's) do not retain: ``retains_buffers``
probes it once per device and launchers unbind only where it is true.
"""

from __future__ import annotations

import threading
import warnings

import pyopencl as cl

_PROBE_SOURCE = "__kernel void hold(__global int *a) { a[get_global_id(0)] = 0; }"

_lock = threading.Lock()
_retains: dict[int, bool] = {}  # device int_ptr -> whether its kernels retain bound buffers


def retains_buffers(ctx: cl.Context, device: cl.Device) -> bool:
    """Whether ``device``'s kernels keep a buffer set as an argument alive (probed once:
    bind a fresh buffer, read its reference count)."""
    hit = _retains.get(device.int_ptr)
    if hit is not None:
        return hit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)  # Intel's compiler always logs
        kernel = cl.Program(ctx, _PROBE_SOURCE).build(devices=[device]).hold
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
    before = buf.reference_count
    kernel.set_arg(0, buf)
    hit = buf.reference_count > before
    kernel.set_arg(0, None)
    with _lock:
        _retains[device.int_ptr] = hit
    return hit


def buffer_indices(args) -> tuple[int, ...]:
    """The positions of buffer arguments in ``args`` (what ``unbind`` clears)."""
    return tuple(i for i, a in enumerate(args) if isinstance(a, cl.MemoryObjectHolder))


def unbind(kernel: cl.Kernel, indices) -> None:
    """Bind NULL to the buffer arguments at ``indices`` (after the enqueue, under the lock
    the caller set them with)."""
    for i in indices:
        kernel.set_arg(i, None)
