"""Ready launchers for the row ops on CUDA: the row half of the per-call fast path
(clreduce/fastpath_rows.py), built on the reductions' raw launch (fast.RawLaunch).

A learned call allocates its outputs -- ``cupy.ndarray`` from CuPy's pool for cupy input,
``Tensor.new_empty`` (torch's caching allocator) for CUDA torch input -- writes the input,
output, weight, bias, statistics and scratch pointers into this thread's parameter slots
and launches the plan's passes with ``cuLaunchKernel`` on the caller's current stream
(CuPy's, or torch's raw current stream on the tensor's device). The kernel arguments come
from ``row_args.kernel_args`` (the list the full path binds too): sizes and ``eps`` are
constants the parameter blocks point at; unused buffers are NULL (the plan's kernels never
touch them). No DLPack, no CuPy array around a tensor, no argument re-marshalling.

Plans whose only buffer to make is the output (softmax, the norms, most scans) take the lean
calls, ``cupy_lean`` and ``torch_lean``: the same pointers and launches without the general
call's statistics, scratch and ``out=`` steps, and, for torch, the output made by
``torch.empty_like`` where the rows are the input's twin (same shape, dtype and C strides).
On an H200's host a learned softmax of a tensor went from ~12 to ~10 us of host time a call.

A weight or bias is bound as it is when the kernel reads its dtype: the math type, or
float16 beside a float16 input (a float16 model's own weights: ``RowProblem.params_half``).
Any other, or one that is not contiguous, is converted per call on the same stream (never
kept: it is the caller's, and may change between calls).

Importing this module imports no GPU library; nothing runs until a launcher is built.
"""

from __future__ import annotations

import numpy as np

from .. import row_args
from ..out_dest import cupy_dest, torch_dest
from .fast import RawLaunch, _cupy_stream_reader, _torch_stream_reader, torch_dtype

_SLOTS = {name: i for i, name in enumerate(row_args.BUFFERS)}  # input, output, weight, bias, stats, partials, carries


class RowLauncher:
    """One learned row-op signature on CUDA (see the module doc)."""

    __slots__ = ("plan", "constants", "run", "device_id", "out_dtype", "acc", "rows_shape", "stats_shape",
                 "stats_alloc", "has_output", "partials_bytes", "scratch_bytes", "op", "cupy", "get_device",
                 "ndarray", "alloc", "cupy_stream", "torch", "torch_out", "torch_acc", "stream_of", "param",
                 "torch_param", "stats_cast", "torch_stats_cast", "like", "empty_like")

    def __init__(self, cupy, device_id: int, problem, force, eps: float, rows_shape: tuple, stats_shape: tuple,
                 torch=None, stats_dtype=None):
        from .rowops import plan_for

        with cupy.cuda.Device(device_id):
            plan, kernels = self.plan = plan_for(device_id, problem, force)
        zero = np.zeros(1, np.uint64)
        constants, layouts = [zero], []
        for arg_list in row_args.kernel_args(plan, problem, eps):
            layout = []
            for arg in arg_list:
                if type(arg) is str:
                    layout.append(zero if arg == row_args.IN_OFFSET else _SLOTS[arg])
                else:
                    constants.append(np.array([arg]))
                    layout.append(constants[-1])
            layouts.append(tuple(layout))
        self.constants = constants  # the parameter blocks point into these
        passes = [(kernel.kernel, (launch.global_size // launch.local_size,), (launch.local_size,))
                  for kernel, launch in zip(kernels, plan.passes)]
        self.run = RawLaunch(cupy, device_id, passes, layouts, len(row_args.BUFFERS))
        sizes = row_args.buffer_bytes(plan, problem)
        self.has_output = bool(sizes["output"])
        self.partials_bytes = sizes["partials"]
        self.scratch_bytes = sizes["partials"] + sizes["carries"]  # one allocation, carries after partials
        self.op = problem.op
        self.device_id = device_id
        self.out_dtype, self.acc = np.dtype(plan.out_dtype), np.dtype(plan.acc_dtype)
        self.param = row_args.param_dtype(plan, problem)  # what the kernel reads weight / bias as
        self.rows_shape, self.stats_shape = rows_shape, stats_shape
        self.stats_alloc = (2,) + stats_shape if problem.op == "moments" else stats_shape if sizes["stats"] else None
        # statistics the API returns in another dtype than the kernel's math type (float16 moments
        # and amax, float64 quantize scales as float32; fastpath_rows decides): one cast of the
        # whole stats buffer, as the full path's cast rounds them (the full path cost ~150 us a
        # call more on an H100)
        cast = None if stats_dtype is None else np.dtype(stats_dtype)
        self.stats_cast, self.torch_stats_cast = cast, None
        self.cupy = cupy
        self.get_device = cupy.cuda.runtime.getDevice
        self.ndarray = cupy.ndarray
        self.alloc = cupy.cuda.alloc
        self.cupy_stream = _cupy_stream_reader(cupy)
        self.torch = torch
        if torch is not None:
            self.torch_out = torch_dtype(torch, self.out_dtype)
            self.torch_acc = torch_dtype(torch, self.acc)
            self.torch_param = torch_dtype(torch, self.param)
            self.torch_stats_cast = None if cast is None else torch_dtype(torch, cast)
            self.stream_of = _torch_stream_reader(torch)
            self.empty_like = torch.empty_like
        self.like = False  # set by fast_launcher: the rows come out as the input tensor's twin

    @property
    def lean(self) -> bool:
        """One output and nothing else to allocate or cast: torch_lean serves the call."""
        return self.has_output and self.stats_alloc is None and not self.scratch_bytes

    def _results(self, out, stats):
        if self.op == "moments":
            return stats[0], stats[1]
        return out if stats is None else (out, stats)

    def cupy_call(self, x, weight, bias, queue, dest=None):
        """cupy arrays in, cupy arrays out, on CuPy's current stream; the rows go into
        ``dest`` (the caller's ``out=``) where ``out_dest.cupy_dest`` allows."""
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                return self.cupy_call(x, weight, bias, queue, dest)
        if dest is not None and self.has_output and cupy_dest(dest, x, (weight, bias), self.device_id):
            out = dest
        else:
            out = self.ndarray(self.rows_shape, self.out_dtype) if self.has_output else None
        stats = None if self.stats_alloc is None else self.ndarray(self.stats_alloc, self.acc)
        # held until the launch is enqueued, then freed (stream-ordered) when this call returns
        held = self.alloc(self.scratch_bytes) if self.scratch_bytes else None
        scratch = 0 if held is None else held.ptr
        w = weight if weight is None or (weight.dtype == self.param and weight.flags.c_contiguous) else \
            self.cupy.ascontiguousarray(weight, dtype=self.param)
        b = bias if bias is None or (bias.dtype == self.param and bias.flags.c_contiguous) else \
            self.cupy.ascontiguousarray(bias, dtype=self.param)
        self.run((x.data.ptr, 0 if out is None else out.data.ptr, 0 if w is None else w.data.ptr,
                  0 if b is None else b.data.ptr, 0 if stats is None else stats.data.ptr, scratch,
                  scratch + self.partials_bytes if scratch else 0), self.cupy_stream())
        if self.stats_cast is not None:
            stats = stats.astype(self.stats_cast)
        return self._results(out, stats)

    def cupy_lean(self, x, weight, bias, queue, dest=None):
        """cupy_call for a plan whose only buffer to make is the output (see torch_lean)."""
        if dest is not None or self.get_device() != self.device_id:
            return self.cupy_call(x, weight, bias, queue, dest)
        out = self.ndarray(self.rows_shape, self.out_dtype)
        param = self.param
        if weight is not None and (weight.dtype != param or not weight.flags.c_contiguous):
            weight = self.cupy.ascontiguousarray(weight, dtype=param)
        if bias is not None and (bias.dtype != param or not bias.flags.c_contiguous):
            bias = self.cupy.ascontiguousarray(bias, dtype=param)
        self.run.four(x.data.ptr, out.data.ptr, 0 if weight is None else weight.data.ptr,
                      0 if bias is None else bias.data.ptr, self.cupy_stream())
        return out

    def torch_lean(self, t, weight, bias, queue, dest=None):
        """torch_call for a plan whose only buffer to make is the output (softmax, the norms,
        scans without partials): the same kernels and pointers, fewer steps -- 12.3 us of host
        time a call on an H200's host, torch's own softmax 6.3 (.gpu profile of 2026-11-29:
        new_empty 2.4 us against empty_like's 1.6, a 7-tuple and a slice store per call).
        ``out=`` and another current device go to torch_call."""
        if dest is not None or self.get_device() != self.device_id:
            return self.torch_call(t, weight, bias, queue, dest)
        # the input's twin where the rows keep its shape, dtype and C strides (fast_launcher
        # checks them once; the signature holds them fixed); else as torch_call makes it
        out = self.empty_like(t) if self.like else t.new_empty(self.rows_shape, dtype=self.torch_out)
        param = self.torch_param
        if weight is not None and (weight.dtype != param or not weight.is_contiguous()):
            weight = weight.detach().to(param).contiguous()
        if bias is not None and (bias.dtype != param or not bias.is_contiguous()):
            bias = bias.detach().to(param).contiguous()
        self.run.four(t.data_ptr(), out.data_ptr(), 0 if weight is None else weight.data_ptr(),
                      0 if bias is None else bias.data_ptr(), self.stream_of(self.device_id))
        return out

    def torch_call(self, t, weight, bias, queue, dest=None):
        """CUDA tensors in, tensors out, on torch's current stream; the rows go into
        ``dest`` (the caller's ``out=``) where ``out_dest.torch_dest`` allows."""
        if self.get_device() != self.device_id:
            with self.cupy.cuda.Device(self.device_id):
                return self.torch_call(t, weight, bias, queue, dest)
        torch = self.torch
        stream = self.stream_of(self.device_id)
        if dest is not None and self.has_output and torch_dest(dest, t, (weight, bias)):
            out = dest
        else:
            # Tensor.new_empty on the input: its device without parsing a device= argument
            # (as the reductions' launcher, fast.py)
            out = t.new_empty(self.rows_shape, dtype=self.torch_out) if self.has_output else None
        stats = None if self.stats_alloc is None else t.new_empty(self.stats_alloc, dtype=self.torch_acc)
        scratch = t.new_empty(self.scratch_bytes, dtype=torch.uint8) if self.scratch_bytes else None
        s = 0 if scratch is None else scratch.data_ptr()
        w = weight if weight is None or (weight.dtype == self.torch_param and weight.is_contiguous()) else \
            weight.detach().to(self.torch_param).contiguous()
        b = bias if bias is None or (bias.dtype == self.torch_param and bias.is_contiguous()) else \
            bias.detach().to(self.torch_param).contiguous()
        self.run((t.data_ptr(), 0 if out is None else out.data_ptr(), 0 if w is None else w.data_ptr(),
                  0 if b is None else b.data_ptr(), 0 if stats is None else stats.data_ptr(), s,
                  s + self.partials_bytes if s else 0), stream)
        if self.torch_stats_cast is not None:
            stats = stats.to(self.torch_stats_cast)
        return self._results(out, stats)


def fast_launcher(x, problem, force, eps: float, rows_shape: tuple, stats_shape: tuple, stats_dtype=None):
    """A ready launcher (a bound method) for calls like one that just ran on a cupy array or
    a CUDA torch tensor ``x`` (clreduce/fastpath_rows.py checks its first result);
    ``stats_dtype``: the dtype the statistics are returned in (None: the kernel's)."""
    import cupy

    if type(x).__module__.partition(".")[0] == "torch":
        import torch

        launcher = RowLauncher(cupy, x.device.index, problem, force, eps, rows_shape, stats_shape, torch,
                               stats_dtype)
        if not launcher.lean:
            return launcher.torch_call
        launcher.like = (launcher.torch_out == x.dtype and rows_shape == tuple(x.shape)
                         and tuple(x.stride()) == _c_strides(rows_shape))
        return launcher.torch_lean
    launcher = RowLauncher(cupy, x.device.id, problem, force, eps, rows_shape, stats_shape, stats_dtype=stats_dtype)
    return launcher.cupy_lean if launcher.lean else launcher.cupy_call


def _c_strides(shape: tuple) -> tuple:
    """C-order strides in elements, as torch reports them (a tensor made by ``new_empty``)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))
