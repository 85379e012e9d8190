"""Ready launchers for the row ops on OpenCL: the row half of the per-call fast path
(clreduce/fastpath_rows.py), built like the reductions' (cl_launch.py).

A launcher replays one learned call: allocate the outputs (rows, statistics) and a split
plan's partials, bind the input, weight and bias, enqueue the plan's passes, and hand back
pyopencl arrays on the call's queue (pyopencl's fast constructor) or, for numpy input,
numpy arrays: written in place where the device shares host memory (``cl_host.output_buffer``),
else read back with copies (the input wrapped in place or copied by
``cl_host.input_buffer``, exactly as the full path does). The kernel arguments come from
``row_args.kernel_args``, the list the full path binds too; the scalars (sizes, ``eps``)
and the unused buffer slots (NULL: the plan's kernels never touch them) are set once per
kernel object.

Threads: each calling thread gets its own kernel objects (``clSetKernelArg`` on a kernel
another thread may be setting is the one unsafe OpenCL call), found by thread id without a
lock; past ``cl_launch._MAX_THREADS`` threads the others share one set under a lock.

It holds its plan entry (plan and ``opencl._CachedKernel`` objects; ``plan_key`` and
``plan_entry`` are what ``fastpath.discard_plans`` matches) and, for numpy calls on the
default or a per-device queue, that queue; never a caller's array, context or queue.
"""

from __future__ import annotations

import threading
from threading import get_ident

import numpy as np
import pyopencl as cl

from . import cl_host as host_buffers
from . import cl_args, cl_launch, cl_pool, opencl, opencl_rowops, row_args
from .cl_launch import _array_maker
from .out_dest import cl_dest, numpy_dest

_RW = cl.mem_flags.READ_WRITE


class RowLauncher:
    """One learned row-op signature on OpenCL (see the module doc)."""

    __slots__ = ("plan_key", "plan_entry", "steps", "sizes", "result_bytes", "acc", "present", "outputs", "makers",
                 "itemsize", "queue", "ctx", "cl_device", "two", "stats_shape", "per_thread", "shared", "lock",
                 "pool_mode", "unbind", "param_dtype", "stats_cast")

    def __init__(self, queue: cl.CommandQueue, per_call_queue: bool, problem, force, eps: float, rows_shape: tuple,
                 stats_shape: tuple, stats_dtype=None):
        self.plan_entry = opencl_rowops.plan_for(queue, problem, force)
        self.plan_key = (queue.context.int_ptr, queue.device.int_ptr, problem, force)  # as plan_for keys it
        plan, kernels = self.plan_entry
        self.sizes = sizes = row_args.buffer_bytes(plan, problem)
        self.result_bytes = sizes["output"] + sizes["stats"]  # what cl_pool.pooled weighs
        self.acc = np.dtype(plan.acc_dtype)
        # numpy results whose statistics the API returns in another dtype than the kernel's (float16
        # moments and amax, float64 quantize scales as float32; fastpath_rows decides): cast on
        # the host as the full path does
        self.stats_cast = None if stats_dtype is None else np.dtype(stats_dtype)
        self.param_dtype = row_args.param_dtype(plan, problem)
        present = {"input", "output", "weight", "bias", "stats", "partials", "carries"}
        present -= {name for name in ("output", "stats", "partials", "carries") if not sizes[name]}
        present -= {name for name, used in (("weight", problem.weight), ("bias", problem.bias)) if not used}
        self.present = present
        steps = []
        for arg_list, cached, launch in zip(row_args.kernel_args(plan, problem, eps), kernels, plan.passes):
            # (argument index, buffer name) bound per call; the input's offset; constants set once
            bound = tuple((i, a) for i, a in enumerate(arg_list) if type(a) is str and a in present)
            offset = next((i for i, a in enumerate(arg_list) if type(a) is str and a == row_args.IN_OFFSET), None)
            fixed = tuple((i, None if type(a) is str else a) for i, a in enumerate(arg_list)
                          if i != offset and (type(a) is not str or a not in present))
            steps.append((cached.program, plan.entry, (launch.global_size,), (launch.local_size,), bound, offset,
                          fixed))
        self.steps = tuple(steps)
        # results: (buffer, shape, dtype) each, in the order the caller gets them
        self.stats_shape = stats_shape
        self.two = problem.op in ("moments", "absmax_scale", "quantize_int8")
        out_dtype = np.dtype(plan.out_dtype)
        if problem.op == "moments":
            self.outputs = (("stats", (2, problem.rows), self.acc),)
        elif self.two:
            self.outputs = (("output", rows_shape, out_dtype), ("stats", stats_shape, self.acc))
        else:
            self.outputs = (("output", rows_shape, out_dtype),)
        self.makers = tuple(_array_maker(shape, dtype) for _, shape, dtype in self.outputs)
        self.itemsize = np.dtype(problem.dtype).itemsize
        # the default and per-device queues live as long as the process (opencl._device_queues)
        self.queue = None if per_call_queue else queue
        self.ctx = None if per_call_queue else queue.context
        self.cl_device = None if per_call_queue else queue.device
        self.per_thread = {}  # thread id -> [[kernel, input offset last set] per pass]
        self.shared = None  # the kernels of threads past _MAX_THREADS, used under ``lock``
        self.lock = threading.Lock()
        # device arrays on GPUs, and large results on CPU devices: results and scratch from
        # cl_pool, as the reductions' launcher does (cl_launch; cl_pool's module doc says why:
        # NVIDIA's release of a buffer whose kernel is pending waits for the GPU; a CPU
        # device's fresh buffer faults in its pages)
        self.pool_mode = cl_pool.mode_for(queue.context, queue) if per_call_queue else "off"
        self.unbind = cl_args.retains_buffers(queue.context, queue.device)  # rusticl: see cl_args

    def _new_kernels(self) -> list:
        own = []
        for program, entry, _, _, _, _, fixed in self.steps:
            kernel = cl.Kernel(program, entry)
            for i, value in fixed:
                kernel.set_arg(i, value)
            own.append([kernel, None])
        return own

    def _enqueue(self, queue, buffers: dict, in_offset: int, uses: dict | None = None, wait_for=None):
        own = self.per_thread.get(get_ident())
        if own is None:
            if len(self.per_thread) >= cl_launch._MAX_THREADS:
                with self.lock:
                    if self.shared is None:
                        self.shared = self._new_kernels()
                    return self._bind_and_enqueue(queue, self.shared, buffers, in_offset, uses, wait_for)
            own = self.per_thread[get_ident()] = self._new_kernels()
        return self._bind_and_enqueue(queue, own, buffers, in_offset, uses, wait_for)

    def _bind_and_enqueue(self, queue, kernels, buffers, in_offset, uses=None, wait_for=None):
        """Enqueue the plan's launches in order, the first after ``wait_for`` (pending events of
        the arrays they read and write: opencl.pending_events); returns the last one's event. ``uses``, where
        given, collects by buffer name the events of the launches that take it (the pool
        counts them against the driver's references)."""
        event = None
        for (_, _, global_size, local_size, bound, offset, _), slot in zip(self.steps, kernels):
            kernel = slot[0]
            for i, name in bound:
                kernel.set_arg(i, buffers[name])
            if offset is not None and slot[1] != in_offset:
                slot[1] = None  # unknown until set
                kernel.set_arg(offset, np.uint64(in_offset))
                slot[1] = in_offset
            event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size,
                                               wait_for=wait_for if event is None else (event,))
            if uses is not None:
                for _, name in bound:
                    uses.setdefault(name, []).append(event)
            if self.unbind:
                cl_args.unbind(kernel, (i for i, _ in bound))
        return event

    def _buffers(self, ctx, queue, weight, bias, given: dict | None = None) -> dict:
        """Fresh buffers for the results and scratch, but those ``given`` (wrapped results)."""
        sizes = self.sizes
        buffers = {name: cl.Buffer(ctx, _RW, sizes[name]) for name in ("output", "stats", "partials", "carries")
                   if sizes[name] and not (given and name in given)}
        if given:
            buffers.update(given)
        return self._bind_params(buffers, queue, weight, bias)

    def _bind_params(self, buffers: dict, queue, weight, bias) -> dict:
        """``buffers`` with the weight and bias as the kernels read them (fresh or pooled
        results alike)."""
        if weight is not None:
            buffers["weight"] = opencl_rowops.param_buffer(queue, weight, self.param_dtype)
        if bias is not None:
            buffers["bias"] = opencl_rowops.param_buffer(queue, bias, self.param_dtype)
        return buffers

    def _assemble(self, results: list):
        if self.stats_cast is not None:  # host results only (fastpath_rows keeps pyopencl ones off)
            with np.errstate(over="ignore"):  # beyond 65504 a float16 statistic is inf, as numpy's
                results = results[:-1] + [results[-1].astype(self.stats_cast)]
        if len(results) == 2:
            return tuple(results)
        if self.two:  # moments: mean and var are the two rows of one (2, rows) array
            stats = results[0]
            return stats[0].reshape(self.stats_shape), stats[1].reshape(self.stats_shape)
        return results[0]

    def device(self, x, weight, bias, queue, dest=None):
        """A pyopencl array in, pyopencl arrays out on the call's queue (not waited on); the
        rows go into ``dest`` (the caller's ``out=``) where ``out_dest.cl_dest`` allows."""
        queue = queue or x.queue
        ctx = x.context
        if dest is not None and not (self.sizes["output"] and cl_dest(dest, x, (weight, bias))):
            dest = None
        if dest is not None or not cl_pool.pooled(cl_pool.mode_override or self.pool_mode, self.result_bytes):
            buffers = self._buffers(ctx, queue, weight, bias, None if dest is None else {"output": dest.base_data})
            buffers["input"] = x.base_data
            event = self._enqueue(queue, buffers, x.offset // self.itemsize,
                                  wait_for=opencl.pending_events(x, weight, bias, dest, queue=queue))
            if dest is not None:
                opencl.hand_over(dest, event, queue)
            return self._assemble([dest if name == "output" and dest is not None else
                                   make(buffers[name], ctx, queue, event)
                                   for make, (name, _, _) in zip(self.makers, self.outputs)])
        sizes, results, scratch = self.sizes, {}, {}
        try:
            for name in ("output", "stats"):
                if sizes[name]:
                    results[name] = cl_pool.output(ctx, queue, sizes[name])
            for name in ("partials", "carries"):
                if sizes[name]:
                    scratch[name] = cl_pool.take(ctx, queue, sizes[name])
            buffers = self._bind_params({name: slot.buffer for name, slot in (results | scratch).items()},
                                        queue, weight, bias)
            buffers["input"] = x.base_data
            uses: dict = {}
            event = self._enqueue(queue, buffers, x.offset // self.itemsize, uses,
                                  opencl.pending_events(x, weight, bias, queue=queue))
        except BaseException:
            for slot in (results | scratch).values():
                cl_pool.discard(slot)
            raise
        for slot in scratch.values():
            cl_pool.give_back(slot, queue, event)
        # the arrays hold their buffers before the pool watches them (a buffer only the pool
        # holds is free to take back)
        arrays = [make(buffers[name], ctx, queue, event) for make, (name, _, _) in zip(self.makers, self.outputs)]
        for name, slot in results.items():
            cl_pool.lend(slot, queue, event, uses.get(name))
        return self._assemble(arrays)

    def host(self, x, weight, bias, queue, dest=None):
        """A numpy array in, numpy arrays out (waited on). Where the device shares host memory,
        the kernels write the numpy results in place (``cl_host.output_buffer``), as they
        read the input; elsewhere the results are read back with copies. The rows go into
        ``dest`` (numpy's ``out=``) itself where ``out_dest.numpy_dest`` allows: wrapped in
        place (``cl_host.dest_buffer``) or read straight into it, where the caller's copy from
        a new array had cost pip PoCL's softmax 122 x 65536 with ``out=`` 10-12 ms against
        6.6-8.0 without it."""
        if self.queue is not None:
            queue, ctx, device = self.queue, self.ctx, self.cl_device
        else:
            ctx, device = queue.context, queue.device
        if dest is not None and not (self.sizes["output"] == dest.nbytes and numpy_dest(dest, x, (weight, bias))):
            dest = None
        in_buf, in_offset, wrapped = host_buffers.input_buffer(ctx, device, x)
        hosts = [dest if name == "output" and dest is not None else host_buffers.output_array(shape, dtype)
                 for name, shape, dtype in self.outputs]
        given = {}
        try:
            for host, (name, _, _) in zip(hosts, self.outputs):
                if host is dest:
                    buf = host_buffers.dest_buffer(ctx, device, dest)
                    if buf is not None:
                        given[name] = buf
                elif host.nbytes == self.sizes[name]:
                    buf = host_buffers.output_buffer(ctx, device, host)
                    if buf is not None:
                        given[name] = buf
            buffers = self._buffers(ctx, queue, weight, bias, given)
            buffers["input"] = in_buf
            event = self._enqueue(queue, buffers, in_offset)
            copies = [cl.enqueue_copy(queue, host, buffers[name], wait_for=(event,), is_blocking=False)
                      for host, (name, _, _) in zip(hosts, self.outputs) if name not in given]
            for host, (name, _, _) in zip(hosts, self.outputs):
                if name in given:
                    host_buffers.read_output(queue, given[name], host, (event,))
            # then the kernels are done and the wrapped input can go
            cl.wait_for_events(copies or [event])
        finally:
            if wrapped:
                in_buf.release()
            for buf in given.values():
                buf.release()
        return self._assemble(hosts)
