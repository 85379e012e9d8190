"""Ready launchers: the OpenCL half of the per-call fast path (clreduce/fastpath.py).

A launcher replays one learned call signature on a new array: allocate the output (and
partials; for device arrays on GPUs they come from ``cl_pool``, whose module doc says why
and when one is reused), bind the buffers (offsets and scalars stay set on the kernel object
while they do not change, under the kernel's lock: see opencl._CachedKernel), enqueue the passes, and
hand the result back -- a ``pyopencl.array.Array`` of the result's shape for device input
(built with pyopencl's fast constructor: the ordinary one costs ~35 us of shape checks), or
for numpy input one blocking read into a fresh numpy array, also waited on through its event
(cl_transfer says why; cheaper than ``Array.get()`` or map + unmap on both CPU runtimes; the
input is wrapped or copied as on the slow path).

What it costs per call, measured on the 2-core EPYC (Intel CPU runtime / PoCL): output
``cl.Buffer`` 1-2 us, two buffer arguments 0.6 us, each enqueue 4 us, the fast Array 2 us,
the plan check 0.4 us. No re-validation, re-planning, queue or context property lookups.

Threads: ``clSetKernelArg`` on a kernel object another thread may be setting is the one
unsafe OpenCL call. The full path locks its shared kernel around set-args + enqueue; a
launcher instead gives each calling thread its own kernel objects (made once per thread
from the same built program, scalars set once), found by thread id without a lock: an
uncontended lock costs 0.6-1.5 us on this project's 2-core VM, several per cent of a
call. Past ``_MAX_THREADS`` threads a launcher falls back to the shared kernel and lock.

It holds its plan cache entry (plan and kernels) but no context or queue (except the
process-lifetime default and per-device queues). Whatever drops plans (a released
context, an evicted program, a sub-group mode marked bad) drops the launchers holding them
too (``opencl._discard_plans``), so a launcher never keeps an evicted program alive;
``opencl.clear_caches`` clears them all.
"""

from __future__ import annotations

import inspect
import math
from threading import get_ident

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .. import fastpath
from ..plan import Force, Problem
from . import cl_host as host_buffers
from . import cl_args, cl_pool, opencl

_RW = cl.mem_flags.READ_WRITE
_BUFFERS = {"input": 0, "output": 1, "partials": 2}
_SPARE = 4  # finished output buffers a launcher keeps (about one per thread that calls it)
_MAX_THREADS = 16  # threads with their own kernel objects per launcher; more share the locked ones
_SPARE_BYTES = 64 * 1024  # ... when output + partials are at most this big
# pyopencl's Array(..., _fast=True) skips argument checks (pyopencl >= 2021.2 has it)
_FAST_ARRAY = "_fast" in inspect.signature(cla.Array.__init__).parameters


def _array_maker(shape: tuple, dtype: np.dtype):
    """A function (buffer, context, queue, event) -> Array of ``shape`` viewing the buffer."""
    strides, step = [], dtype.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(1, n)
    strides = tuple(reversed(strides))
    size = math.prod(shape)
    if _FAST_ARRAY:
        def make(buf, ctx, queue, event):
            return cla.Array(None, shape, dtype, strides=strides, data=buf, events=[event], _fast=True,
                             _size=size, _context=ctx, _queue=queue)
    else:  # pragma: no cover - older pyopencl
        def make(buf, ctx, queue, event):
            return cla.Array(queue, shape, dtype, data=buf, events=[event])
    return make


class _Launcher:
    """One learned signature on OpenCL (see the module doc)."""

    __slots__ = ("plan_key", "plan_entry", "plans", "plan", "kernels", "problem", "steps", "out_shape", "out_dtype",
                 "out_nbytes", "partials_bytes", "itemsize", "queue", "ctx", "device", "make_array", "spare",
                 "per_thread", "pool_mode", "unbind")

    def __init__(self, queue, per_call_queue: bool, problem: Problem, force: Force | None, out_shape: tuple,
                 itemsize: int):
        # what opencl._discard_plans matches, and the cache object it came from (tests swap it)
        self.plans = opencl._plan_cache
        self.plan_entry = opencl.plan_for(queue, problem, force)
        self.plan_key = opencl.plan_key(queue.context, queue.device, problem, force)
        self.plan, self.kernels = self.plan_entry
        self.problem = problem
        self.steps = tuple((_BUFFERS[p.reads], _BUFFERS[p.writes], (p.global_size,), (p.local_size,), p)
                           for p in self.plan.passes)
        self.out_shape = out_shape
        self.out_dtype = np.dtype(self.plan.device_out_dtype)
        self.out_nbytes = problem.rows * problem.inner * self.out_dtype.itemsize
        self.partials_bytes = self.plan.partials_bytes
        self.itemsize = itemsize
        # the default and per-device queues live as long as the process (opencl._device_queues)
        self.queue = None if per_call_queue else queue
        self.ctx = None if per_call_queue else queue.context
        self.device = None if per_call_queue else queue.device
        self.make_array = _array_maker(out_shape, self.out_dtype)
        # numpy input on a process-lifetime queue: its output (and partials) buffers are
        # only used inside one call, so small finished ones are kept for the next (creating
        # one costs ~2.5 us on the Intel runtime; large calls do not notice). Not for a
        # caller's queue: a buffer holds its context, which must be free to go when dropped.
        small = self.out_nbytes + self.partials_bytes <= _SPARE_BYTES
        self.spare = [] if small and not per_call_queue else None
        # thread id -> [[kernel, in offset, out offset] per pass]: a dict read is atomic, and
        # a thread id is reused only once its thread has ended
        self.per_thread = {}
        # device arrays: how this device's result buffers are pooled (cl_pool; the
        # signature pins the device)
        self.pool_mode = cl_pool.mode_for(queue.context, queue) if per_call_queue else "off"
        self.unbind = cl_args.retains_buffers(queue.context, queue.device)  # rusticl: see cl_args

    def _own_kernels(self):
        """This thread's kernel objects, made on its first call; None past _MAX_THREADS."""
        if len(self.per_thread) >= _MAX_THREADS:
            return None
        own = []
        for (_, _, _, _, launch), cached in zip(self.steps, self.kernels):
            kernel = cl.Kernel(cached.program, launch.entry)
            opencl._set_scalars(kernel, 4, [value for _, _, value in launch.scalars],
                                ["uint64" if kind == "u64" else launch.acc_dtype for _, kind, _ in launch.scalars])
            own.append([kernel, None, None])
        self.per_thread[get_ident()] = own
        return own

    def _enqueue(self, queue, kernels, buffers, offsets, wait_for=None):
        """The plan's launches in order, the first after ``wait_for`` (the input's pending
        events: opencl.pending_events); returns the last one's event."""
        own = self.per_thread.get(get_ident())
        if own is None:
            own = self._own_kernels()
            if own is None:
                return self._enqueue_shared(queue, kernels, buffers, offsets, wait_for)
        event = None
        for (reads, writes, global_size, local_size, _), slot in zip(self.steps, own):
            kernel = slot[0]
            kernel.set_arg(0, buffers[reads])
            kernel.set_arg(2, buffers[writes])
            if slot[1] != offsets[reads] or slot[2] != offsets[writes]:
                slot[1] = slot[2] = None  # unknown until both are set
                opencl._set_scalars(kernel, 1, (offsets[reads],), ("uint64",))
                opencl._set_scalars(kernel, 3, (offsets[writes],), ("uint64",))
                slot[1], slot[2] = offsets[reads], offsets[writes]
            event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size,
                                               wait_for=wait_for if event is None else (event,))
            if self.unbind:
                cl_args.unbind(kernel, opencl._BUFFER_ARGS)
        return event

    def _enqueue_shared(self, queue, kernels, buffers, offsets, wait_for=None):
        event = None
        for (reads, writes, global_size, local_size, launch), cached in zip(self.steps, kernels):
            with cached.lock:  # set-args + enqueue on a kernel other threads share
                opencl._set_args(cached, launch, buffers[reads], offsets[reads], buffers[writes], offsets[writes])
                event = cl.enqueue_nd_range_kernel(queue, cached.kernel, global_size, local_size,
                                                   wait_for=wait_for if event is None else (event,))
                if self.unbind:
                    cl_args.unbind(cached.kernel, opencl._BUFFER_ARGS)
        return event

    def _error(self, exc, queue):
        return opencl._contextual(exc, opencl.describe(queue.device, self.problem, self.plan))

    def device_array(self, a, where):
        """A pyopencl array in, a pyopencl array of the result's shape out (not waited on)."""
        if opencl._plan_cache is not self.plans:
            return fastpath.STALE
        queue = where.get("queue") or a.queue
        ctx = a.context
        if not cl_pool.pooled(cl_pool.mode_override or self.pool_mode, self.out_nbytes):
            try:
                out = cl.Buffer(ctx, _RW, self.out_nbytes)
                partials = cl.Buffer(ctx, _RW, self.partials_bytes) if self.partials_bytes else None
                event = self._enqueue(queue, self.kernels, (a.base_data, out, partials),
                                      (a.offset // self.itemsize, 0, 0), opencl.pending_events(a, queue=queue))
            except (cl.Error, MemoryError) as exc:
                raise self._error(exc, queue) from exc
            return self.make_array(out, ctx, queue, event)
        # GPUs (and large results on CPU devices): output and partials from cl_pool. On NVIDIA,
        # releasing a buffer whose kernel has not finished (a dropped result, the partials at
        # the end of this call) waits for the GPU, which serialised back-to-back calls
        out = partials = None
        try:
            out = cl_pool.output(ctx, queue, self.out_nbytes)
            if self.partials_bytes:
                partials = cl_pool.take(ctx, queue, self.partials_bytes)
            event = self._enqueue(queue, self.kernels, (a.base_data, out.buffer, partials and partials.buffer),
                                  (a.offset // self.itemsize, 0, 0), opencl.pending_events(a, queue=queue))
        except (cl.Error, MemoryError) as exc:
            for slot in (out, partials):
                if slot is not None:
                    cl_pool.discard(slot)
            raise self._error(exc, queue) from exc
        if partials is not None:
            cl_pool.give_back(partials, queue, event)
        # the array holds the buffer before the pool watches it (a buffer only the pool
        # holds is free to take back)
        result = self.make_array(out.buffer, ctx, queue, event)
        cl_pool.lend(out, queue, event)
        return result

    def host_array(self, a, where):
        """A numpy array in, a numpy array of the result's shape out (waited on)."""
        if opencl._plan_cache is not self.plans:
            return fastpath.STALE
        queue = self.queue
        if queue is None:
            queue = where["queue"]
            ctx, device = queue.context, queue.device
        else:
            ctx, device = self.ctx, self.device
        wrapped = False
        spare = self.spare
        try:
            in_buf, in_offset, wrapped = host_buffers.input_buffer(ctx, device, a)
            try:
                out, partials = spare.pop()  # list.pop is atomic: threads never share one
            except (IndexError, AttributeError):
                out = cl.Buffer(ctx, _RW, self.out_nbytes)
                partials = cl.Buffer(ctx, _RW, self.partials_bytes) if self.partials_bytes else None
            event = self._enqueue(queue, self.kernels, (in_buf, out, partials), (in_offset, 0, 0))
            host = np.empty(self.out_shape, self.out_dtype)
            # one read, waited on; it also means the kernels finished, so a buffer wrapping the
            # caller's memory can go now, and the output buffers can serve the next call. Its
            # event, not the blocking call, says when: Mesa 22.3's rusticl returns from a
            # blocking read early when another thread flushed the queue (cl_transfer)
            cl.enqueue_copy(queue, host, out, wait_for=(event,), is_blocking=True).wait()
        except (cl.Error, MemoryError) as exc:
            raise self._error(exc, queue) from exc
        finally:
            if wrapped:
                in_buf.release()
        if spare is not None and len(spare) < _SPARE:
            spare.append((out, partials))
        return host


def fast_launcher(backend, a, native, problem: Problem, force, out_shape: tuple, where: dict):
    """A launcher replaying ``backend.reduce`` for calls with this signature, or None where
    the slow path does more than launch in place (a byte-order copy, a float64 input
    converted for a device without fp64, an input beyond one allocation)."""
    queue_option = where.get("queue")
    if isinstance(native, np.ndarray):
        if native is not a:
            return None
        queue = opencl.queue_for(where.get("device"), queue_option)
        if (problem.dtype == "float64" and problem.acc_dtype in ("float32", "float16")
                and not opencl.caps_of(queue.device).fp64):
            return None
        if native.nbytes > host_buffers.alloc_limit(queue.device) - host_buffers.PAGE - host_buffers.SIZE_MULTIPLE:
            return None
        launcher = _Launcher(queue, queue_option is not None, problem, force, out_shape, native.itemsize)
        return launcher.host_array if launcher.plan.out_words == 1 else None  # two-word sums: below
    if not opencl._is_cl_array(native) or native is not a or "device" in where:
        return None
    queue = backend.queue_for_array(native, queue_option, None)
    launcher = _Launcher(queue, True, problem, force, out_shape, native.dtype.itemsize)
    # exact two-word integer sums (an integer mean that could wrap: plan.out_words 2) are
    # rounded to float64 on the host (ops.wide_sums_to_float64): the full path's work
    return launcher.device_array if launcher.plan.out_words == 1 else None
