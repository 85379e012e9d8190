"""OpenCL backend: device choice, program cache, buffers and launches.

Thin by design: all decisions are the planner's; this module builds what the plan names,
checks the compiled kernel agrees with the plan (work-group size, sub-group width), and
enqueues the passes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings

import numpy as np

import pyopencl as cl

from .. import config
from ..caps import DeviceCaps
from ..kernels import read_source, source_hash
from ..plan import Force, LaunchPlan, Problem, plan
from .opencl_probe import probe_device

INSTALL_HINT = (
    "no OpenCL platform/device found. For a CPU device from pip: "
    "pip install 'pyopencl[pocl]' (or: pip install 'clreduce[pocl]')"
)


class NoOpenCLDevice(RuntimeError):
    """No OpenCL platform or no device matching the request."""


def all_devices() -> list[cl.Device]:
    """Every device of every platform, in platform order (as PYOPENCL_CTX counts them)."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    devices = []
    for platform in platforms:
        try:
            devices.extend(platform.get_devices())
        except cl.Error:
            continue
    return devices


def _select_by_selector(selector: str) -> cl.Device:
    platforms = cl.get_platforms()
    if ":" in selector or selector.isdigit():
        p, _, d = selector.partition(":")
        try:
            return platforms[int(p)].get_devices()[int(d or 0)]
        except (ValueError, IndexError):
            raise NoOpenCLDevice(f"CLREDUCE_DEVICE={selector!r}: no such platform:device index") from None
    needle = selector.lower()
    for device in all_devices():
        if needle in device.name.lower() or needle in device.platform.name.lower() or needle in device.vendor.lower():
            return device
    names = [f"{d.platform.name} / {d.name}" for d in all_devices()]
    raise NoOpenCLDevice(f"CLREDUCE_DEVICE={selector!r} matches none of {names}")


def choose_default_device() -> tuple[cl.Context, str]:
    """The default context and a line saying why it was chosen.

    Order: PYOPENCL_CTX exactly as pyopencl reads it, then CLREDUCE_DEVICE, then the
    first GPU, then the first CPU device, then anything.
    """
    if not all_devices():
        raise NoOpenCLDevice(INSTALL_HINT)
    if os.environ.get("PYOPENCL_CTX"):
        ctx = cl.create_some_context(interactive=False)
        return ctx, f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']}"
    selector = config.default_device_selector()
    if selector:
        device = _select_by_selector(selector)
        return cl.Context([device]), f"CLREDUCE_DEVICE={selector}"
    devices = all_devices()
    for kind, why in ((cl.device_type.GPU, "first GPU"), (cl.device_type.CPU, "first CPU device")):
        for device in devices:
            if device.type & kind:
                return cl.Context([device]), why
    return cl.Context([devices[0]]), "first device"


@functools.cache
def _default_queue_and_reason() -> tuple[cl.CommandQueue, str]:
    ctx, why = choose_default_device()
    _contexts.append(ctx)
    return cl.CommandQueue(ctx), why


def default_queue() -> cl.CommandQueue:
    return _default_queue_and_reason()[0]


def default_reason() -> str:
    return _default_queue_and_reason()[1]


# Contexts are kept alive here beside their queues: the Intel CPU runtime reports
# INVALID_CONTEXT on queue.context once the Python Context object is collected.
_contexts: list[cl.Context] = []


@functools.cache
def _queue_for_device(device: cl.Device) -> cl.CommandQueue:
    ctx = cl.Context([device])
    _contexts.append(ctx)
    return cl.CommandQueue(ctx)


def queue_for(device=None, queue=None) -> cl.CommandQueue:
    """The queue a call runs on: ``queue``, else a cached one for ``device``, else the default."""
    if queue is not None:
        return queue
    if device is None:
        return default_queue()
    if isinstance(device, str):
        device = _select_by_selector(device)
    if not isinstance(device, cl.Device):
        raise TypeError(f"device must be a pyopencl.Device or a selector string, not {type(device).__name__}")
    return _queue_for_device(device)


def caps_of(device: cl.Device) -> DeviceCaps:
    return probe_device(device)


# ---- programs ----------------------------------------------------------------------------
_kernel_cache: dict[tuple, cl.Kernel] = {}


def get_kernel(ctx: cl.Context, device: cl.Device, kernel_file: str, entry: str, options: tuple[str, ...]) -> cl.Kernel:
    """Build (once per context, device, source hash and options) and return the kernel."""
    source = read_source(kernel_file)
    key = (ctx.int_ptr, device.int_ptr, source_hash(source), options, entry)
    kernel = _kernel_cache.get(key)
    if kernel is None:
        try:
            with warnings.catch_warnings():
                # Intel's compiler always prints a build log; a real failure raises below.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(ctx, source).build(options=list(options), devices=[device])
        except cl.RuntimeError as exc:
            raise RuntimeError(f"building {kernel_file} with {' '.join(options)} failed on {device.name!r}:\n{exc}") from exc
        kernel = getattr(program, entry)
        _kernel_cache[key] = kernel
    return kernel


def _kernel_fits(kernel: cl.Kernel, device: cl.Device, launch_plan: LaunchPlan, caps: DeviceCaps) -> DeviceCaps | None:
    """None when the compiled kernel runs the plan as planned, else caps to re-plan with."""
    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    if limit < launch_plan.wg_size:
        return dataclasses.replace(caps, max_work_group_size=int(limit))
    if launch_plan.sg_size and launch_plan.reqd_sg == "none":
        # Without a way to request a width, the compiler picks it: check it is the one planned.
        actual = kernel.get_sub_group_info(device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                           (launch_plan.wg_size,))
        if actual != launch_plan.sg_size:
            return dataclasses.replace(caps, subgroup_sizes=(int(actual),))
    return None


def plan_for(queue: cl.CommandQueue, problem: Problem, force: Force | None = None) -> tuple[LaunchPlan, list[cl.Kernel]]:
    """Plan for the queue's device and build its kernels, re-planning once if the
    compiled kernel cannot run the plan (register pressure lowers CL_KERNEL_WORK_GROUP_SIZE)."""
    device = queue.device
    caps = caps_of(device)
    force = (force or Force()).merged(config.forced_plan())
    for attempt in range(2):
        launch_plan = plan(caps, problem, force)
        kernels = [get_kernel(queue.context, device, p.kernel_file, p.entry, p.options) for p in launch_plan.passes]
        replan_caps = None
        for kernel in kernels:
            replan_caps = replan_caps or _kernel_fits(kernel, device, launch_plan, caps)
        if replan_caps is None:
            return launch_plan, kernels
        if attempt == 0 and force.wg_size is None:
            caps = replan_caps
            continue
        raise RuntimeError(f"compiled kernel cannot run plan {launch_plan} on {device.name!r}")
    raise AssertionError("unreachable")


class PreparedReduction:
    """Buffers and kernels for one reduction; ``enqueue`` may run many times (benchmarks)."""

    def __init__(self, queue: cl.CommandQueue, rows2d: np.ndarray, problem: Problem, force: Force | None = None):
        self.queue = queue
        self.plan, self.kernels = plan_for(queue, problem, force)
        ctx = queue.context
        mf = cl.mem_flags
        self.in_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=rows2d)
        self.out_dtype = np.dtype(self.plan.device_out_dtype)
        self.out = np.empty(problem.rows, dtype=self.out_dtype)
        self.out_buf = cl.Buffer(ctx, mf.WRITE_ONLY, max(1, self.out.nbytes))
        self.partials_buf = None
        if len(self.plan.passes) > 1:
            nbytes = problem.rows * self.plan.split * np.dtype(self.plan.acc_dtype).itemsize
            self.partials_buf = cl.Buffer(ctx, mf.READ_WRITE, nbytes)

    def enqueue(self, wait_for=None) -> list[cl.Event]:
        buffers = {"input": self.in_buf, "output": self.out_buf, "partials": self.partials_buf}
        events = []
        for launch, kernel in zip(self.plan.passes, self.kernels):
            kernel.set_args(buffers[launch.reads], np.uint64(0), buffers[launch.writes], np.uint64(0),
                            np.uint64(launch.n_rows), np.uint64(launch.row_len), np.uint64(launch.row_stride),
                            np.uint64(launch.chunk_len), np.uint64(launch.mean_count))
            event = cl.enqueue_nd_range_kernel(self.queue, kernel, (launch.global_size,), (launch.local_size,),
                                               wait_for=events[-1:] or wait_for)
            events.append(event)
        return events

    def result(self, events=None) -> np.ndarray:
        cl.enqueue_copy(self.queue, self.out, self.out_buf, wait_for=events)
        return self.out


def reduce_rows(rows2d: np.ndarray, problem: Problem, *, queue=None, device=None, force: Force | None = None) -> np.ndarray:
    """Reduce each row of a C-contiguous 2-D numpy array; returns the device output dtype."""
    q = queue_for(device, queue)
    prepared = PreparedReduction(q, rows2d, problem, force)
    return prepared.result(prepared.enqueue())


class OpenCLBackend:
    """base.Backend for OpenCL: numpy arrays in and out, buffers managed here."""

    name = "opencl"

    def unavailable_reason(self) -> str | None:
        return None if all_devices() else INSTALL_HINT

    def owns(self, array) -> bool:
        return isinstance(array, np.ndarray)

    def to_native(self, array):
        if type(array).__module__.split(".")[0] == "pyopencl":
            raise TypeError("pyopencl.array.Array input is not supported yet; pass a numpy array (arr.get())")
        return np.asarray(array), _identity

    def rows_view(self, native, order, rows, row_len):
        moved = native.transpose(order) if native.ndim else native
        return np.ascontiguousarray(moved).reshape(rows, row_len)

    def reduce_rows(self, rows2d, problem, *, force=None, device=None, queue=None, **options):
        if options:
            raise TypeError(f"unexpected options for the OpenCL backend: {sorted(options)}")
        return reduce_rows(rows2d, problem, queue=queue, device=device, force=force)

    def caps(self, device=None) -> DeviceCaps:
        return caps_of(queue_for(device).device)


def _identity(x):
    return x


BACKEND = OpenCLBackend()
