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
import struct
import threading
import warnings

import numpy as np

import pyopencl as cl
import pyopencl.cltypes  # noqa: F401  (cl.cltypes.make_long8)

from .. import config, fastpath, tuning
from ..caps import DeviceCaps, normalize_implementation
from ..kernels import read_source, source_hash
from ..lru import LRU
from ..ops import wide_sums_to_float64
from ..plan import Force, LaunchPlan, Problem, UnsupportedOnDevice, plan
from . import cl_args
from . import cl_fallback as fallback
from . import cl_host as host_buffers
from . import cl_pool, cl_transfer
from .cl_chunks import reduce_pieces
from .cl_cache_lock import CompilerCacheLocked, check_compiler_cache_lock  # noqa: F401 (re-exported)
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
    # An implementation name ("pocl", "intel", "rusticl") picks that runtime's device before
    # any substring match: "intel" must not find PoCL's "pthread-Intel(R) Xeon(R) ...".
    for device in all_devices():
        if normalize_implementation(device.platform.name, device.vendor, device.name) == needle:
            return device
    for device in all_devices():
        haystack = (device.name, device.platform.name, device.vendor)
        if any(needle in text.lower() for text in haystack):
            return device
    names = [f"{d.platform.name} / {d.name}" for d in all_devices()]
    raise NoOpenCLDevice(f"device selector {selector!r} matches none of {names}")


def is_simulator(device: cl.Device) -> bool:
    """True for simulators (Oclgrind), which report themselves as GPUs and run ~1000x slower."""
    return "oclgrind" in device.platform.name.lower()


def choose_default_device() -> tuple[cl.Context, str]:
    """The default context and a line saying why it was chosen.

    Order: PYOPENCL_CTX exactly as pyopencl reads it, then CLREDUCE_DEVICE, then the
    first GPU, then the first CPU device, then anything else. Simulators (Oclgrind) are
    never chosen by the last three steps: name one to use it.
    """
    if not all_devices():
        raise NoOpenCLDevice(INSTALL_HINT)
    if os.environ.get("PYOPENCL_CTX"):
        try:
            ctx = cl.create_some_context(interactive=False)
        except (cl.Error, RuntimeError, ValueError, IndexError) as exc:
            # pyopencl's own words for a selector that matches nothing (PYOPENCL_CTX=9:
            # "input did not match any platform"), raised as the error every other path gives
            raise NoOpenCLDevice(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no OpenCL device "
                                 f"({exc}); `clreduce probe` lists them") from None
        return ctx, f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']}"
    selector = config.default_device_selector()
    if selector:
        device = _select_by_selector(selector)
        return cl.Context([device]), f"CLREDUCE_DEVICE={selector}"
    devices = [d for d in all_devices() if not is_simulator(d)]
    skipped = " (simulator Oclgrind skipped)" if len(devices) < len(all_devices()) else ""
    if not devices:
        raise NoOpenCLDevice("the only OpenCL devices are simulators (Oclgrind), which are never chosen by "
                             "default: name one with CLREDUCE_DEVICE=oclgrind, or " + INSTALL_HINT)
    for kind, why in ((cl.device_type.GPU, "first GPU"), (cl.device_type.CPU, "first CPU device")):
        for device in devices:
            if device.type & kind:
                return cl.Context([device]), why + skipped
    return cl.Context([devices[0]]), "first device" + skipped


# Context creation is serialised. functools.cache may still run the default's body twice when
# two threads miss at once: the loser's context serves that one call and stays in _contexts
# (never collected mid-use); per-device queues below are unique (double-checked).
_queue_lock = threading.RLock()


@functools.cache
def _default_queue_and_reason() -> tuple[cl.CommandQueue, str]:
    with _queue_lock:
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
_device_queues: dict[int, cl.CommandQueue] = {}


def _queue_for_device(device: cl.Device) -> cl.CommandQueue:
    queue = _device_queues.get(device.int_ptr)
    if queue is None:
        with _queue_lock:
            queue = _device_queues.get(device.int_ptr)
            if queue is None:
                ctx = cl.Context([device])
                _contexts.append(ctx)
                queue = _device_queues[device.int_ptr] = cl.CommandQueue(ctx)
    return queue


def check_queue(queue) -> None:
    """``queue=`` is None or a pyopencl.CommandQueue; a TypeError naming what it got otherwise
    (the reductions and the row ops check it before any work)."""
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")


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
    """The device's probed DeviceCaps (cached per device for the process)."""
    if device.int_ptr not in _probed:
        # The probe compiles test kernels and treats any failure as "feature missing": a
        # stale pyopencl cache lock would cost it a silent minute per kernel. Say so first.
        check_compiler_cache_lock()
    caps = probe_device(device)
    _probed.add(device.int_ptr)
    return caps


_probed: set[int] = set()


# ---- errors ------------------------------------------------------------------------------
class KernelBuildError(RuntimeError):
    """The driver could not build a kernel variant; ``log`` holds its build log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log or message


class DeviceOutOfMemory(MemoryError):
    """A device allocation failed (or exceeds what one allocation may hold)."""


class DeviceOutOfResources(RuntimeError):
    """The driver ran out of resources enqueueing or running a kernel."""


def describe(device: cl.Device, problem: Problem | None = None, launch_plan: LaunchPlan | None = None) -> str:
    """'device ..., op ..., shape ..., plan ...' for error messages."""
    parts = [f"device {device.name.strip()!r} ({device.platform.name.strip()})"]
    if problem is not None:
        parts.append(f"op {problem.op}, {problem.dtype} (rows, row_len, inner) = "
                     f"({problem.rows}, {problem.row_len}, {problem.inner})")
    if launch_plan is not None:
        parts.append(f"plan {launch_plan.strategy}/{launch_plan.sg_mode} sg {launch_plan.sg_size} "
                     f"wg {launch_plan.wg_size} vec {launch_plan.vec} split {launch_plan.split}")
    return ", ".join(parts)


_OOM_CODES = {"MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_HOST_MEMORY", "INVALID_BUFFER_SIZE"}


def _contextual(exc: Exception, where: str) -> Exception:
    """A clreduce exception for a pyopencl error, naming ``where`` (device/op/shape/plan)."""
    text = str(exc)
    if isinstance(exc, cl.MemoryError) or any(code in text for code in _OOM_CODES):
        return DeviceOutOfMemory(f"out of device memory: {text} [{where}]")
    if "OUT_OF_RESOURCES" in text:
        return DeviceOutOfResources(f"out of resources: {text} [{where}]")
    return RuntimeError(f"OpenCL error: {text} [{where}]")


# ---- programs ----------------------------------------------------------------------------
class _CachedKernel:
    """A built kernel, its program, and the scalar arguments last set on it: a repeated call
    with the same plan only re-binds its buffers (pyopencl's set_args costs tens of
    microseconds).

    ``lock`` is held around set-args + enqueue: clSetKernelArg on a shared cl_kernel is the
    one OpenCL call that is not thread-safe, and the arguments are captured at enqueue, so
    nothing else needs it. Threads on different kernels never wait for each other.
    """

    __slots__ = ("kernel", "program", "scalars", "offsets", "lock")

    def __init__(self, program: cl.Program, entry: str):
        self.program = program
        self.kernel = getattr(program, entry)
        self.scalars = None
        self.offsets = None
        self.lock = threading.Lock()


def _on_program_evicted(key, _cached) -> None:
    # A plan holds its kernels: drop the plans that use an evicted program, so the number
    # of live programs is the kernel cache's bound and no more.
    _discard_plans(lambda _k, value: any(c is _cached for c in value[1]))


# Other plan caches keyed and valued like ``_plan_cache`` -- (context ptr, ...) ->
# (plan, [_CachedKernel, ...]) -- register ``discard_if`` here to be dropped with it
# (opencl_rowops: the row ops' plans hold the same kernels).
plan_cache_listeners: list = []


def _discard_plans(predicate) -> None:
    # the fast path's launchers hold plan entries too (fastpath.py, cl_launch.py)
    fastpath.discard_plans(predicate)
    for discard_if in plan_cache_listeners:
        discard_if(predicate)
    cache = _plan_cache
    if isinstance(cache, LRU):
        cache.discard_if(predicate)
    else:  # a test swapped in a plain dict (tests/test_bad_input.py)
        for key in [k for k, v in list(cache.items()) if predicate(k, v)]:
            cache.pop(key, None)


_kernel_cache = LRU(config.cache_size, on_evict=_on_program_evicted)
_plan_cache = LRU(lambda: 4 * config.cache_size())


def _drop_plans_using(_caps, mode: str) -> None:
    # a mode just marked bad (build failure elsewhere, or a wrong answer in probe --verify)
    _discard_plans(lambda _k, value: value[0].sg_mode == mode)


fallback.listeners.append(_drop_plans_using)


class _ContextHold:
    """Our own reference to a context whose programs we cache (so its handle, our cache key,
    cannot be reused by a new context while entries exist) and how much one cached program
    adds to its reference count (PoCL: 1, Intel: 0) -- to tell when only we hold it."""

    __slots__ = ("context", "per_program")

    def __init__(self, context: cl.Context):
        self.context = context
        self.per_program = None


_holds: dict[int, _ContextHold] = {}
_holds_lock = threading.Lock()


def _reference_count(ctx: cl.Context) -> int:
    return int(ctx.get_info(cl.context_info.REFERENCE_COUNT))


def release_unused_contexts() -> int:
    """Forget the programs and plans of contexts nobody but these caches holds any more.

    Runs before every program build, so a process that makes a Context per call releases
    the old ones; call it directly to release at once. Returns how many were released.
    """
    released = 0
    own = {c.int_ptr for c in _contexts}
    with _holds_lock:
        for ptr, hold in list(_holds.items()):
            if ptr in own or hold.per_program is None:
                continue
            cl_pool.drop_context(ptr)  # pooled buffers hold the context too
            programs = {id(c.program) for k, c in _kernel_cache.items() if k[0] == ptr}
            programs |= {id(c.program) for k, (_, ks) in list(_plan_cache.items()) if k[0] == ptr for c in ks}
            if _reference_count(hold.context) <= 1 + len(programs) * hold.per_program:
                _kernel_cache.discard_if(lambda k, _v: k[0] == ptr)
                _discard_plans(lambda k, _v: k[0] == ptr)
                del _holds[ptr]
                released += 1
    return released


def _quiet_options(device: cl.Device) -> list[str]:
    """PoCL's clang prints its warnings straight to the process's stderr ("4 warnings
    generated." on a user's terminal, from AVX ABI notes about float16 vectors in its own
    builtin headers on a host without AVX-512), not only into the build log: ``-w`` (a
    standard OpenCL build option) keeps them out. Other drivers report into the log only."""
    return ["-w"] if "Portable Computing Language" in device.platform.name else []


def _build_program(ctx: cl.Context, device: cl.Device, source: str, options: tuple[str, ...]) -> cl.Program:
    """Build ``source`` for ``device`` (tests replace this to inject driver failures)."""
    check_compiler_cache_lock()
    try:
        with warnings.catch_warnings():
            # Intel's compiler always prints a build log; a real failure raises below.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return cl.Program(ctx, source).build(options=list(options) + _quiet_options(device), devices=[device])
    except (cl.RuntimeError, cl.LogicError) as exc:  # LogicError: e.g. an option the driver rejects
        raise KernelBuildError(str(exc), log=str(exc)) from exc


def _cached_kernel(ctx: cl.Context, device: cl.Device, kernel_file: str, entry: str,
                   options: tuple[str, ...]) -> _CachedKernel:
    source = read_source(kernel_file)
    key = (ctx.int_ptr, device.int_ptr, source_hash(source), options, entry)
    cached = _kernel_cache.get(key)
    if cached is not None:
        return cached
    release_unused_contexts()
    with _holds_lock:
        hold = _holds.get(key[0])
        if hold is None:
            hold = _holds[key[0]] = _ContextHold(ctx)
        before = _reference_count(hold.context)
    try:
        program = _build_program(ctx, device, source, options)
    except KernelBuildError as exc:
        raise KernelBuildError(f"building {kernel_file} with {' '.join(options)} failed on "
                               f"{device.name.strip()!r}:\n{exc}", log=exc.log) from exc
    if hold.per_program is None:
        hold.per_program = min(1, max(0, _reference_count(hold.context) - before))
    return _kernel_cache.put(key, _CachedKernel(program, entry))


def get_kernel(ctx: cl.Context, device: cl.Device, kernel_file: str, entry: str, options: tuple[str, ...]) -> cl.Kernel:
    """Build (once per context, device, source hash and options) and return the kernel.

    The kernel object is shared between threads: set its arguments and enqueue it only
    while holding ``_cached_kernel(...).lock`` (as ``gather`` does).
    """
    return _cached_kernel(ctx, device, kernel_file, entry, options).kernel


def _kernel_fits(kernel: cl.Kernel, device: cl.Device, launch_plan: LaunchPlan, caps: DeviceCaps) -> DeviceCaps | None:
    """None when the compiled kernel runs the plan as planned, else caps to re-plan with."""
    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    if limit < launch_plan.wg_size:
        return dataclasses.replace(caps, max_work_group_size=int(limit))
    if launch_plan.sg_size and launch_plan.reqd_sg == "none" and launch_plan.sg_mode != "shuffle_ptx":
        # Without a way to request a width, the compiler picks it: check it is the one planned.
        # (PTX warps are 32 wide by the hardware; NVIDIA's driver has no sub-group query.)
        actual = kernel.get_sub_group_info(device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                           (launch_plan.wg_size,))
        if actual != launch_plan.sg_size:
            return dataclasses.replace(caps, subgroup_sizes=(int(actual),))
    return None


def plan_for(queue: cl.CommandQueue, problem: Problem, force: Force | None = None) -> tuple[LaunchPlan, list[_CachedKernel]]:
    """Plan for the queue's device and build its kernels, re-planning once if the
    compiled kernel cannot run the plan (register pressure lowers CL_KERNEL_WORK_GROUP_SIZE),
    and moving down built-in -> shuffle -> local when the driver cannot build a sub-group
    variant (see cl_fallback.py).

    Memoised per (context, device, problem, force) in a bounded LRU: a repeated call does
    one lookup.
    """
    ctx = queue.context
    device = queue.device
    key = plan_key(ctx, device, problem, force)
    force = key[3]
    hit = _plan_cache.get(key)
    if hit is not None:
        return hit
    caps = caps_of(device)
    tuned = tuning.tuned_force(caps, problem, force)  # a stored winner, when nothing is forced
    if tuned is not None and tuned != force:
        try:
            hit = _plan_and_build(ctx, device, caps, problem, tuned)
        except Exception as exc:  # noqa: BLE001 - a stale winner must never fail a call
            warnings.warn(f"tuned plan {tuned} no longer runs on {device.name!r} ({exc}); using the planner's "
                          "plan (re-run `clreduce tune`)", RuntimeWarning, stacklevel=3)
        else:
            _plan_cache[key] = hit
            return hit
    _plan_cache[key] = hit = _plan_and_build(ctx, device, caps, problem, force)
    return hit


def plan_key(ctx: cl.Context, device: cl.Device, problem: Problem, force: Force | None) -> tuple:
    """The plan cache's key for a problem: ``force`` merged over the CLREDUCE_* overrides,
    and the tune state (a new winner is used at once)."""
    force = (force or Force()).merged(config.forced_plan())
    return ctx.int_ptr, device.int_ptr, problem, force, tuning.enabled() and tuning.generation()


def _plan_and_build(ctx, device, caps: DeviceCaps, problem: Problem, force: Force):
    user_forced_mode = force.sg_mode is not None
    attempt_force = force
    for _ in range(8):  # at most: 2 re-plans for fit + 2 mode fallbacks, with margin
        attempt_force = fallback.avoid_bad_modes(caps, problem, attempt_force, user_forced_mode)
        launch_plan = plan(caps, problem, attempt_force)
        try:
            kernels = [_cached_kernel(ctx, device, p.kernel_file, p.entry, p.options) for p in launch_plan.passes]
        except KernelBuildError as exc:
            if user_forced_mode or not fallback.can_fall_back(launch_plan.sg_mode):
                raise KernelBuildError(f"{exc} [{describe(device, problem, launch_plan)}]", log=exc.log) from exc
            fallback.mark_bad(caps, launch_plan.sg_mode, exc.log, "build failed")
            continue
        replan_caps = None
        for cached in kernels:
            replan_caps = replan_caps or _kernel_fits(cached.kernel, device, launch_plan, caps)
        if replan_caps is None:
            return launch_plan, kernels
        if force.wg_size is None and replan_caps != caps:
            caps = replan_caps
            continue
        if force.wg_size is not None:
            # e.g. rusticl on llvmpipe: CL_DEVICE_MAX_WORK_GROUP_SIZE 1024, a built kernel less
            raise UnsupportedOnDevice(
                f"forced wg_size={force.wg_size}: the compiled kernel allows at most "
                f"{replan_caps.max_work_group_size} work-items per group [{describe(device, problem, launch_plan)}]")
        raise RuntimeError(f"compiled kernel cannot run plan [{describe(device, problem, launch_plan)}]")
    raise RuntimeError(f"no buildable plan [{describe(device, problem)}]")


# pyopencl's set_arg of a scalar costs ~14 us (it tries the argument as each memory-object
# type first); _set_arg_buf_pack_multi (what pyopencl's own typed invokers call) packs it
# with a struct type character in ~0.3 us. Characters whose size matches the kernel's type.
_PACK_CHARS = {np.dtype(t).name: np.dtype(t).char.encode() for t in "bBhHiIlLfd"
               if struct.calcsize(np.dtype(t).char) == np.dtype(t).itemsize}


def _set_scalars(kernel: cl.Kernel, first: int, values, dtypes) -> None:
    """Set arguments ``first, first + 1, ...`` to ``values`` of numpy dtype names ``dtypes``."""
    pack = getattr(kernel, "_set_arg_buf_pack_multi", None)
    chars = [_PACK_CHARS.get(name) for name in dtypes]
    if pack is not None and None not in chars:
        args = []
        for i, (char, value) in enumerate(zip(chars, values), start=first):
            args += (i, char, float(value) if char in b"fd" else int(value))
        pack(tuple(args))
        return
    for i, (name, value) in enumerate(zip(dtypes, values), start=first):
        kernel.set_arg(i, np.dtype(name).type(value))


# the reduction and gather kernels' buffer arguments: (src, src offset, dst, dst offset, ...)
_BUFFER_ARGS = (0, 2)


def _set_args(cached: _CachedKernel, launch, src, src_off: int, dst, dst_off: int) -> None:
    """Bind the arguments; the caller holds ``cached.lock`` until the enqueue is done.

    Buffers are bound every time (~0.3 us each); offsets and scalars only when they differ
    from what this kernel object last had (``cached``), which a repeated call never does.
    """
    kernel = cached.kernel
    kernel.set_arg(0, src)
    kernel.set_arg(2, dst)
    if cached.offsets != (src_off, dst_off):
        cached.offsets = None  # unknown until both are set
        _set_scalars(kernel, 1, (src_off,), ("uint64",))
        _set_scalars(kernel, 3, (dst_off,), ("uint64",))
        cached.offsets = (src_off, dst_off)
    if cached.scalars != launch.scalars:
        cached.scalars = None
        _set_scalars(kernel, 4, [value for _, _, value in launch.scalars],
                     ["uint64" if kind == "u64" else launch.acc_dtype for _, kind, _ in launch.scalars])
        cached.scalars = launch.scalars


def clear_caches() -> None:
    """Forget built programs, plans, argument state, the fast path's learned calls and the
    buffer pool (``cl_pool``; pyopencl's disk cache remains)."""
    fastpath.clear()
    _kernel_cache.clear()
    _plan_cache.clear()
    cl_pool.clear()
    with _holds_lock:
        _holds.clear()


def cache_sizes() -> dict[str, int]:
    """Entries in each in-process cache (programs, plans, contexts held, learned calls of
    the fast path) and the bound."""
    return {"programs": len(_kernel_cache), "plans": len(_plan_cache), "contexts": len(_holds),
            "fast_path": fastpath.size(), "bound": config.cache_size(), "pooled_buffers": cl_pool.stats()["slots"]}


class PreparedReduction:
    """Buffers and kernels for one reduction; ``enqueue`` may run many times (benchmarks).

    ``src`` is a C-contiguous numpy array or a contiguous ``pyopencl.array.Array`` read in
    place. A numpy input is wrapped in place (zero-copy) on devices that share host memory,
    else uploaded once; call ``release()`` (``reduce`` does) once the kernels have finished
    so no device buffer keeps pointing into the caller's array. The result stays on the
    device (``device_result``) until ``result()`` copies it to the host.
    """

    def __init__(self, queue: cl.CommandQueue, src, problem: Problem, force: Force | None = None):
        import pyopencl.array as cla

        self.queue = queue
        self.problem = problem
        self.plan, self.kernels = plan_for(queue, problem, force)
        ctx = queue.context
        device = queue.device
        self._unbind = cl_args.retains_buffers(ctx, device)
        self._host = None
        try:
            if isinstance(src, np.ndarray):
                self.in_buf, self.in_offset, wrapped = host_buffers.input_buffer(ctx, device, src)
                if wrapped:
                    self._host = src  # keeps the wrapped memory alive as long as the buffer
            else:
                self.in_buf = src.base_data
                self.in_offset = src.offset // src.dtype.itemsize
            self.device_result = cla.empty(queue, problem.rows * problem.inner * self.plan.out_words,
                                           np.dtype(self.plan.device_out_dtype))
            self.partials_buf = (cl.Buffer(ctx, cl.mem_flags.READ_WRITE, self.plan.partials_bytes)
                                 if self.plan.partials_bytes else None)
        except (cl.Error, MemoryError) as exc:
            self.release()
            raise _contextual(exc, describe(device, problem, self.plan)) from exc

    def enqueue(self, wait_for=None) -> list[cl.Event]:
        out = self.device_result
        buffers = {"input": (self.in_buf, self.in_offset), "output": (out.base_data, out.offset // out.dtype.itemsize),
                   "partials": (self.partials_buf, 0)}
        events = []
        try:
            for launch, cached in zip(self.plan.passes, self.kernels):
                (src, src_off), (dst, dst_off) = buffers[launch.reads], buffers[launch.writes]
                with cached.lock:
                    _set_args(cached, launch, src, src_off, dst, dst_off)
                    event = cl.enqueue_nd_range_kernel(self.queue, cached.kernel, (launch.global_size,),
                                                       (launch.local_size,), wait_for=events[-1:] or wait_for)
                    if self._unbind:  # rusticl: see cl_args
                        cl_args.unbind(cached.kernel, _BUFFER_ARGS)
                events.append(event)
        except cl.Error as exc:
            raise _contextual(exc, describe(self.queue.device, self.problem, self.plan)) from exc
        # an out-of-order user queue: whoever reads device_result waits for the last pass
        out.add_event(events[-1])
        return events

    def result(self, events=None) -> np.ndarray:
        """The result on the host; waits for the passes (``enqueue`` adds the last one's event
        to ``device_result``, whose read waits for its events) and for the read itself. Exact two-word integer sums
        (``plan.out_words == 2``) come back as float64, each rounded once."""
        host = cl_transfer.to_host(self.device_result, self.queue)
        if self.plan.out_words == 2:
            return wide_sums_to_float64(host, signed=self.plan.acc_dtype == "int64")
        return host

    def release(self) -> None:
        """Free a wrapped input buffer now: it must not outlive the call that holds the
        caller's memory (a copied one is left to the garbage collector)."""
        buf = getattr(self, "in_buf", None)
        if self._host is not None and buf is not None:
            buf.release()
            self.in_buf = None
            self._host = None


def c_order(array, queue=None):
    """``array`` itself when C-contiguous, else a device-side C-order copy of it (``gather``
    in its own axis order): for the pyopencl operations that read a buffer in memory order
    (elementwise operators, ``reshape``) or refuse strided views (``get``)."""
    if array.flags.c_contiguous:
        return array
    return gather(queue or array.queue, array, list(range(array.ndim)))


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
    cached = _cached_kernel(queue.context, queue.device, "gather.cl", "gather_strided", (f"-DNDIM={ndim}", f"-DT={store_t}"))
    # shape and strides travel as long8 kernel arguments: no host-to-device transfer
    pad = [1] * (8 - len(shape))
    meta_shape = cl.cltypes.make_long8(*(list(shape) + pad))
    meta_strides = cl.cltypes.make_long8(*(list(strides) + [0] * (8 - len(strides))))
    wg = 64
    groups = min(-(-out.size // wg), 4096)
    with cached.lock:  # set-args + enqueue on a shared kernel: see _CachedKernel
        cached.scalars = cached.offsets = None
        cached.kernel(queue, (groups * wg,), (wg,), array.base_data, np.int64(array.offset // itemsize),
                      out.base_data, np.uint64(out.size), meta_shape, meta_strides)
        if cl_args.retains_buffers(queue.context, queue.device):  # rusticl: see cl_args
            cl_args.unbind(cached.kernel, _BUFFER_ARGS)
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
        adjacent block of a C-contiguous array; otherwise the reduced axes moved last, as a
        strided numpy view (``cl_chunks`` copies it into C order piece by piece) or a
        device-side C-order copy of a pyopencl array."""
        if isinstance(native, np.generic):
            native = np.asarray(native)  # argmax of a 0-d bool array: the api's `x != 0` is a scalar
        if isinstance(native, np.ndarray) and not native.flags.c_contiguous:
            native, axes = host_buffers.base_order(native, axes)  # a transpose reads in place
        shape = native.shape
        adjacent = bool(axes) and list(axes) == list(range(axes[0], axes[-1] + 1))
        if adjacent:
            outer = math.prod(shape[:axes[0]])
            k = math.prod(shape[axes[0]:axes[-1] + 1])
            inner = math.prod(shape[axes[-1] + 1:])
            if isinstance(native, np.ndarray):
                return native, outer, k, inner  # a strided view is gathered in pieces (cl_chunks)
            if _is_c_contiguous(native):
                return native, outer, k, inner
        kept = [i for i in range(native.ndim) if i not in axes]
        outer = math.prod(shape[i] for i in kept)
        k = math.prod(shape[i] for i in axes)
        order = kept + list(axes)
        if isinstance(native, np.ndarray):
            return native.transpose(order), outer, k, 1  # gathered in pieces (cl_chunks)
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
        as_dtype = None
        if (problem.dtype == "float64" and problem.acc_dtype in ("float32", "float16")
                and isinstance(src, np.ndarray) and not caps_of(q.device).fp64):
            # dtype=float32 is the user's opt-in on a device without fp64: convert on the
            # host, piece by piece (numpy would also compute in float32)
            as_dtype = np.float32
            problem = dataclasses.replace(problem, dtype="float32")
        if isinstance(src, np.ndarray):
            return reduce_pieces(q, src, problem, force, _start_host, as_dtype)
        prepared = PreparedReduction(q, src, problem, force)
        prepared.enqueue(wait_for=pending_events(src, queue=q))
        if prepared.plan.out_words != 1:
            return prepared.result()  # two-word sums are rounded on the host (the API moves them back)
        return prepared.device_result

    def from_host(self, host: np.ndarray, like, queue=None, device=None):
        """``host`` moved to where ``like`` lives (a no-op for numpy ``like``)."""
        if _is_cl_array(like):
            # np.ascontiguousarray would make a 0-d result (a full reduction) 1-d: shape (1,)
            host = np.asarray(host)
            if not host.flags.c_contiguous:
                host = host.copy(order="C")
            return cl_transfer.to_device(self.queue_for_array(like, queue), host)
        return host

    def write_out(self, out, result) -> None:
        """Copy ``result`` into the caller's ``out=`` (numpy or pyopencl array)."""
        if isinstance(out, np.ndarray):
            out[...] = cl_transfer.to_host(result) if _is_cl_array(result) else result
            return
        if not _is_cl_array(out):
            raise TypeError(f"out must be a numpy or pyopencl array, not {type(out).__name__}")
        if not out.flags.c_contiguous:
            raise ValueError("out= must be a C-contiguous pyopencl array")
        if not _is_cl_array(result):
            # np.asarray, not np.ascontiguousarray: that makes a 0-d result (a full reduction
            # of numpy input into a 0-d out=) 1-d, which pyopencl's set refuses
            host = np.asarray(result, dtype=out.dtype)
            out.set(host if host.flags.c_contiguous else host.copy(order="C"), async_=True)
            out.finish()  # the copy reads a temporary: wait for it (cl_transfer says why)
            return
        if result.context != out.context:
            raise ValueError("out= lives in another OpenCL context than the input")
        if result.dtype != out.dtype:
            result = result.astype(out.dtype)
        copy_into(out, result)

    def caps(self, device=None) -> DeviceCaps:
        return caps_of(queue_for(device).device)

    def fast_launcher(self, a, native, problem: Problem, force, out_shape: tuple, where: dict, expected=None):
        """A ready launcher for calls like this one (clreduce/fastpath.py), or None."""
        from .cl_launch import fast_launcher

        return fast_launcher(self, a, native, problem, force, out_shape, where)


def _start_host(queue, src: np.ndarray, problem: Problem, force) -> PreparedReduction:
    """One contiguous numpy piece that fits one allocation, enqueued; the caller calls
    ``result()`` (waits, reads back) and then ``release()`` (frees the wrapped input)."""
    prepared = PreparedReduction(queue, src, problem, force)
    try:
        prepared.enqueue()
    except BaseException:
        prepared.release()
        raise
    return prepared


def pending_events(*arrays, queue=None) -> list | None:
    """The events a kernel on ``queue`` that reads or writes these pyopencl arrays must wait
    for (their ``events``, as pyopencl's own operations wait for them), or None. An array
    computed on another queue, or on an out-of-order one, may not be written yet when a kernel
    on the call's queue reads it: ``clreduce.sum(a * 2 + 1, queue=q2)`` read the sum's input
    before q1 had written it (an outside thread fuzz run, 2026-11-29: most calls wrong on
    every runtime here). Events of ``queue`` itself are left out where it runs in order. The
    other queues are flushed: Mesa's rusticl never starts commands nobody flushed, and a
    kernel waiting on them waited forever. numpy arrays and None have no events."""
    in_order = None
    events = []
    for a in arrays:
        for event in getattr(a, "events", None) or ():
            source = event.command_queue  # None for a user event
            if queue is not None and source is not None and source.int_ptr == queue.int_ptr:
                if in_order is None:
                    in_order = not queue.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
                if in_order:
                    continue  # the queue runs it first anyway
            if source is not None:
                source.flush()
            events.append(event)
    return events or None


def copy_into(out, result) -> None:
    """``result`` (a pyopencl array, out's dtype and shape) into the caller's pyopencl ``out``,
    on the queue that computed it (in order behind its kernels) after whatever ``out`` still
    waits on; ``out``'s later readers wait for the copy (its events, and its own queue where
    that is another). An ``out`` made on another queue had been copied on its queue without
    waiting for the kernel: it kept its old contents (an outside thread fuzz run,
    2026-11-29), and a row op's ``out.setitem`` refused the queues (and a 0-d ``out``)."""
    if not result.nbytes:
        return
    queue = result.queue
    if out.flags.c_contiguous and result.flags.c_contiguous:
        event = cl.enqueue_copy(queue, out.base_data, result.base_data, byte_count=result.nbytes,
                                dst_offset=out.offset, src_offset=result.offset,
                                wait_for=pending_events(out, queue=queue))
    else:
        # a strided out: pyopencl's copy kernel, enqueued on the result's queue; float16 as
        # its bits (pyopencl's kernels have no half type)
        view = out.with_queue(queue)
        if out.dtype == np.float16:
            view, result = view.view(np.uint16), result.view(np.uint16)
        view.setitem(slice(None), result, wait_for=pending_events(out, queue=queue))
        event = view.events[-1] if view.events else cl.enqueue_marker(queue)
    hand_over(out, event, queue)


def hand_over(out, event, queue) -> None:
    """``out``'s later readers wait for ``event`` (on ``queue``), which wrote it: its events,
    and its own queue where that is another (flushed first: see pending_events)."""
    out.add_event(event)
    if out.queue is not None and out.queue.int_ptr != queue.int_ptr:
        queue.flush()
        cl.enqueue_barrier(out.queue, wait_for=[event])


def _is_cl_array(array) -> bool:
    return type(array).__module__.startswith("pyopencl") and hasattr(array, "base_data")


def _identity(x):
    return x


BACKEND = OpenCLBackend()
