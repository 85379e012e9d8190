"""OpenCL backend: device choice, program cache, buffers and launches.

Thin by design: all decisions are the planner's; this module builds what the plan names,
checks the compiled kernel agrees with the plan (work-group size, sub-group width), and
enqueues the passes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
import warnings

import numpy as np

import pyopencl as cl
import pyopencl.cltypes  # noqa: F401  (cl.cltypes.make_long8)

from .. import config
from ..caps import DeviceCaps, normalize_vendor
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
            raise NoOpenCLDevice(f"device selector {selector!r}: no such platform:device index") from None
    needle = selector.lower()
    for device in all_devices():
        # the normalised vendor lets "pocl" find PoCL, whose strings never say "pocl"
        vendor = normalize_vendor(device.vendor, device.name, device.platform.name)
        haystack = (device.name, device.platform.name, device.vendor, vendor)
        if any(needle in text.lower() for text in haystack):
            return device
    names = [f"{d.platform.name} / {d.name}" for d in all_devices()]
    raise NoOpenCLDevice(f"device selector {selector!r} matches none of {names}")


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
class _CachedKernel:
    """A built kernel and the scalar arguments last set on it: a repeated call with the same
    plan only re-binds its buffers (pyopencl's set_args costs tens of microseconds). The state
    lives and dies with the cache entry, so clearing the cache frees the programs too."""

    __slots__ = ("kernel", "scalars", "lock")

    def __init__(self, kernel: cl.Kernel):
        self.kernel = kernel
        self.scalars = None
        # clSetKernelArg on a shared cl_kernel is not thread-safe: two threads (dask's threaded
        # scheduler) interleaving set_args and enqueue gave INVALID_KERNEL_ARGS or an output
        # never written. The enqueue captures the arguments, so the lock covers just those two.
        self.lock = threading.Lock()


_kernel_cache: dict[tuple, _CachedKernel] = {}


def _cached_kernel(ctx: cl.Context, device: cl.Device, kernel_file: str, entry: str,
                   options: tuple[str, ...]) -> _CachedKernel:
    source = read_source(kernel_file)
    key = (ctx.int_ptr, device.int_ptr, source_hash(source), options, entry)
    cached = _kernel_cache.get(key)
    if cached is None:
        try:
            with warnings.catch_warnings():
                # Intel's compiler always prints a build log; a real failure raises below.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(ctx, source).build(options=list(options), devices=[device])
        except cl.RuntimeError as exc:
            raise RuntimeError(f"building {kernel_file} with {' '.join(options)} failed on {device.name!r}:\n{exc}") from exc
        cached = _kernel_cache[key] = _CachedKernel(getattr(program, entry))
    return cached


def get_kernel(ctx: cl.Context, device: cl.Device, kernel_file: str, entry: str, options: tuple[str, ...]) -> cl.Kernel:
    """Build (once per context, device, source hash and options) and return the kernel."""
    return _cached_kernel(ctx, device, kernel_file, entry, options).kernel


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


_plan_cache: dict[tuple, tuple[LaunchPlan, list[_CachedKernel]]] = {}


def plan_for(queue: cl.CommandQueue, problem: Problem, force: Force | None = None) -> tuple[LaunchPlan, list[_CachedKernel]]:
    """Plan for the queue's device and build its kernels, re-planning once if the
    compiled kernel cannot run the plan (register pressure lowers CL_KERNEL_WORK_GROUP_SIZE).

    Memoised per (context, device, problem, force): a repeated call does one dict lookup.
    """
    force = (force or Force()).merged(config.forced_plan())
    ctx = queue.context
    device = queue.device
    key = (ctx.int_ptr, device.int_ptr, problem, force)
    hit = _plan_cache.get(key)
    if hit is not None:
        return hit
    caps = caps_of(device)
    for attempt in range(2):
        launch_plan = plan(caps, problem, force)
        kernels = [_cached_kernel(ctx, device, p.kernel_file, p.entry, p.options) for p in launch_plan.passes]
        replan_caps = None
        for cached in kernels:
            replan_caps = replan_caps or _kernel_fits(cached.kernel, device, launch_plan, caps)
        if replan_caps is None:
            _plan_cache[key] = (launch_plan, kernels)
            return launch_plan, kernels
        if attempt == 0 and force.wg_size is None:
            caps = replan_caps
            continue
        raise RuntimeError(f"compiled kernel cannot run plan {launch_plan} on {device.name!r}")
    raise AssertionError("unreachable")


def _scalar(kind: str, value, acc_dtype: str):
    if kind == "u64":
        return np.uint64(value)
    return np.dtype(acc_dtype).type(value)  # "acc": declared ACC_T in the kernel


def _set_args(cached: _CachedKernel, launch, src, src_off: int, dst, dst_off: int) -> None:
    kernel = cached.kernel
    kernel.set_arg(0, src)
    kernel.set_arg(1, np.uint64(src_off))
    kernel.set_arg(2, dst)
    kernel.set_arg(3, np.uint64(dst_off))
    if cached.scalars != launch.scalars:
        for i, (_, kind, value) in enumerate(launch.scalars, start=4):
            kernel.set_arg(i, _scalar(kind, value, launch.acc_dtype))
        cached.scalars = launch.scalars


def clear_caches() -> None:
    """Forget built programs, plans and argument state (pyopencl's disk cache remains)."""
    _kernel_cache.clear()
    _plan_cache.clear()


class PreparedReduction:
    """Buffers and kernels for one reduction; ``enqueue`` may run many times (benchmarks).

    ``src`` is a C-contiguous numpy array (uploaded once) or a contiguous
    ``pyopencl.array.Array`` read in place. The result stays on the device
    (``device_result``) until ``result()`` copies it to the host.
    """

    def __init__(self, queue: cl.CommandQueue, src, problem: Problem, force: Force | None = None):
        import pyopencl.array as cla

        self.queue = queue
        self.plan, self.kernels = plan_for(queue, problem, force)
        ctx = queue.context
        mf = cl.mem_flags
        if isinstance(src, np.ndarray):
            self.in_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src)
            self.in_offset = 0
        else:
            self.in_buf = src.base_data
            self.in_offset = src.offset // src.dtype.itemsize
        self.device_result = cla.empty(queue, problem.rows * problem.inner, np.dtype(self.plan.device_out_dtype))
        self.partials_buf = cl.Buffer(ctx, mf.READ_WRITE, self.plan.partials_bytes) if self.plan.partials_bytes else None

    def enqueue(self, wait_for=None) -> list[cl.Event]:
        out = self.device_result
        buffers = {"input": (self.in_buf, self.in_offset), "output": (out.base_data, out.offset // out.dtype.itemsize),
                   "partials": (self.partials_buf, 0)}
        events = []
        for launch, cached in zip(self.plan.passes, self.kernels):
            (src, src_off), (dst, dst_off) = buffers[launch.reads], buffers[launch.writes]
            with cached.lock:
                _set_args(cached, launch, src, src_off, dst, dst_off)
                event = cl.enqueue_nd_range_kernel(self.queue, cached.kernel, (launch.global_size,),
                                                   (launch.local_size,), wait_for=events[-1:] or wait_for)
            events.append(event)
        return events

    def result(self, events=None) -> np.ndarray:
        return self.device_result.get(queue=self.queue)


def gather(queue: cl.CommandQueue, array, order: list[int]):
    """Device-side copy of a pyopencl array into C order with its axes permuted to ``order``."""
    import pyopencl.array as cla

    itemsize = array.dtype.itemsize
    shape = [array.shape[i] for i in order]
    strides = [array.strides[i] // itemsize for i in order]
    out = cla.empty(queue, tuple(shape), array.dtype)
    if out.size == 0:
        return out
    ndim = max(1, len(shape))
    store_t = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[itemsize]
    kernel = get_kernel(queue.context, queue.device, "gather.cl", "gather_strided", (f"-DNDIM={ndim}", f"-DT={store_t}"))
    # shape and strides travel as long8 kernel arguments: no host-to-device transfer
    pad = [1] * (8 - len(shape))
    meta_shape = cl.cltypes.make_long8(*(list(shape) + pad))
    meta_strides = cl.cltypes.make_long8(*(list(strides) + [0] * (8 - len(strides))))
    wg = 64
    groups = min(-(-out.size // wg), 4096)
    kernel(queue, (groups * wg,), (wg,), array.base_data, np.int64(array.offset // itemsize), out.base_data,
           np.uint64(out.size), meta_shape, meta_strides)
    return out


def _is_c_contiguous(array) -> bool:
    return bool(array.flags.c_contiguous)


class OpenCLBackend:
    """base.Backend for OpenCL: numpy arrays and pyopencl arrays."""

    name = "opencl"

    def unavailable_reason(self) -> str | None:
        return None if all_devices() else INSTALL_HINT

    def owns(self, array) -> bool:
        return isinstance(array, np.ndarray) or _is_cl_array(array)

    def to_native(self, array):
        if _is_cl_array(array):
            return array, _identity
        host = np.asarray(array)
        if not host.dtype.isnative:
            host = host.astype(host.dtype.newbyteorder("="))  # kernels read native byte order
        return host, _identity

    def layout(self, native, axes: tuple[int, ...], *, queue=None, device=None):
        """(source, outer, K, inner) for the reduce: in place when the reduced axes are one
        adjacent block of a C-contiguous array; otherwise a C-order copy (host for numpy,
        device for pyopencl arrays) with the reduced axes moved last."""
        shape = native.shape
        adjacent = bool(axes) and list(axes) == list(range(axes[0], axes[-1] + 1))
        if adjacent:
            outer = math.prod(shape[:axes[0]])
            k = math.prod(shape[axes[0]:axes[-1] + 1])
            inner = math.prod(shape[axes[-1] + 1:])
            if isinstance(native, np.ndarray):
                return np.ascontiguousarray(native), outer, k, inner
            if _is_c_contiguous(native):
                return native, outer, k, inner
        kept = [i for i in range(native.ndim) if i not in axes]
        outer = math.prod(shape[i] for i in kept)
        k = math.prod(shape[i] for i in axes)
        order = kept + list(axes)
        if isinstance(native, np.ndarray):
            return np.ascontiguousarray(native.transpose(order)), outer, k, 1
        return gather(self.queue_for_array(native, queue, device), native, order), outer, k, 1

    def queue_for_array(self, native, queue=None, device=None):
        if _is_cl_array(native):
            if queue is not None and queue.context != native.context:
                raise ValueError("queue= belongs to another context than the input pyopencl array")
            if device is not None:
                raise ValueError("device= cannot move a pyopencl array; pass queue= on its context")
            return queue or native.queue
        return queue_for(device, queue)

    def reduce(self, src, problem: Problem, *, force=None, device=None, queue=None, **options):
        """Run the plan; a pyopencl array result for pyopencl input, numpy otherwise."""
        if options:
            raise TypeError(f"unexpected options for the OpenCL backend: {sorted(options)}")
        q = self.queue_for_array(src, queue, device)
        if (problem.dtype == "float64" and problem.acc_dtype in ("float32", "float16")
                and isinstance(src, np.ndarray) and not caps_of(q.device).fp64):
            # dtype=float32 is the user's opt-in on a device without fp64: convert on the
            # host, where the upload copies anyway (numpy would also compute in float32)
            src = src.astype(np.float32)
            problem = dataclasses.replace(problem, dtype="float32")
        prepared = PreparedReduction(q, src, problem, force)
        prepared.enqueue()
        if _is_cl_array(src):
            return prepared.device_result
        return prepared.result()

    def from_host(self, host: np.ndarray, like, queue=None, device=None):
        """``host`` moved to where ``like`` lives (a no-op for numpy ``like``)."""
        if _is_cl_array(like):
            import pyopencl.array as cla

            return cla.to_device(self.queue_for_array(like, queue), np.ascontiguousarray(host))
        return host

    def write_out(self, out, result) -> None:
        """Copy ``result`` into the caller's ``out=`` (numpy or pyopencl array)."""
        if isinstance(out, np.ndarray):
            out[...] = result.get() if _is_cl_array(result) else result
            return
        if not _is_cl_array(out):
            raise TypeError(f"out must be a numpy or pyopencl array, not {type(out).__name__}")
        if not out.flags.c_contiguous:
            raise ValueError("out= must be a C-contiguous pyopencl array")
        if not _is_cl_array(result):
            out.set(np.ascontiguousarray(result, dtype=out.dtype))
            return
        if result.context != out.context:
            raise ValueError("out= lives in another OpenCL context than the input")
        if result.dtype != out.dtype:
            result = result.astype(out.dtype)
        if result.nbytes:
            cl.enqueue_copy(out.queue, out.base_data, result.base_data, byte_count=result.nbytes,
                            dst_offset=out.offset, src_offset=result.offset)

    def caps(self, device=None) -> DeviceCaps:
        return caps_of(queue_for(device).device)


def _is_cl_array(array) -> bool:
    return type(array).__module__.startswith("pyopencl") and hasattr(array, "base_data")


def _identity(x):
    return x


BACKEND = OpenCLBackend()
