"""CUDA backend: the shared plans run through CuPy as CUDA kernels: the ``cl_kernels/*.cl``
files behind ``cl_dialect_cuda.h``.

Arrays: cupy arrays and CUDA torch tensors are used in place (DLPack, no copy); results
come back as the input's kind, on the input's device, ordered on the input's stream
(CuPy's current stream; torch's current stream for torch tensors). Host arrays (numpy)
are uploaded to CuPy's current device and results come back as numpy.

Importing this module imports no GPU library: CuPy (and torch, only when a torch tensor
is passed) are imported inside the functions that need them, so ``unavailable_reason``
can say what is missing.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading

import numpy as np

from ... import config, tuning
from ...lru import LRU
from ...ops import SUPPORTED_DTYPES, wide_sums_to_float64
from ...plan import Force, LaunchPlan, Problem
from .launch import blocks_per_sm, get_kernel
from .probe import probe_device
from .tune import cuda_plan

INSTALL_HINT = ("cupy not installed: pip install 'clreduce[cuda]' "
                "(CuPy for CUDA 12 drivers; see the README for CUDA 13)")


class CudaUnavailable(RuntimeError):
    """CUDA cannot run here: CuPy, the driver, NVRTC or a device is missing."""


def _import_cupy():
    try:
        import cupy
    except ImportError as exc:
        raise CudaUnavailable(f"{INSTALL_HINT} ({exc})") from None
    return cupy


def unavailable_reason() -> str | None:
    """None when CUDA kernels can run here, else what is missing."""
    try:
        import cupy
    except ImportError as exc:
        return f"{INSTALL_HINT} ({exc})"
    except Exception as exc:  # a broken CuPy install (wrong CUDA wheel, missing libraries)
        return f"cupy failed to import: {type(exc).__name__}: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no usable CUDA driver ({type(exc).__name__}: {exc})"
    if count < 1:
        return "the CUDA driver reports no device"
    try:
        cupy.cuda.nvrtc.getVersion()
    except Exception as exc:
        return f"NVRTC (CUDA's runtime compiler) is not loadable ({type(exc).__name__}: {exc}); " \
               "install the CUDA toolkit's NVRTC or a CuPy wheel that bundles it"
    return None


_READY: dict[str, object] = {}


# ---- per-call state -----------------------------------------------------------------------
# to_native learns the caller's stream (torch's current stream for tensors) and device;
# layout and reduce, called next by clreduce.api with the array to_native returned
# (or the view made of it), run there. The state is keyed by the array object itself, so
# a direct call of reduce_rows never picks up a stale one.
_tls = threading.local()


class _CallState:
    __slots__ = ("array", "device", "stream", "scope")

    def __init__(self, array, device, stream, scope):
        self.array, self.device, self.stream, self.scope = array, device, stream, scope


def _state_for(array):
    state = getattr(_tls, "state", None)
    return state if state is not None and state.array is array else None


def _close_scope():
    state = getattr(_tls, "state", None)
    _tls.state = None
    if state is not None and state.scope is not None:
        state.scope.close()


def _torch_stream(tensor, cupy):
    import torch

    s = torch.cuda.current_stream(tensor.device)
    return cupy.cuda.ExternalStream(int(s.cuda_stream), tensor.device.index)


def _is_torch(array) -> bool:
    return type(array).__module__.split(".")[0] == "torch"


_TORCH_NAMES = {"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
                "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
                "float16": "float16", "float32": "float32", "float64": "float64"}


_SUPPORTED = frozenset(np.dtype(name) for name in SUPPORTED_DTYPES)


def _check_native_dtype(dtype) -> None:
    if dtype not in _SUPPORTED:
        _check_dtype(dtype.name, str(dtype))


def _check_dtype(name: str, shown: str) -> None:
    if name not in SUPPORTED_DTYPES:
        raise TypeError(f"clreduce does not support dtype {shown} (supported: {', '.join(SUPPORTED_DTYPES)})")


def _device_id(device, cupy) -> int:
    """An int device id from an int, a cupy Device, a torch.device / 'cuda:N' string."""
    if device is None:
        return cupy.cuda.Device().id
    if isinstance(device, (int, np.integer)):
        return int(device)
    if hasattr(device, "id"):
        return int(device.id)
    if hasattr(device, "index") and getattr(device, "type", "cuda") == "cuda":
        return int(device.index or 0)
    if isinstance(device, str) and device.startswith("cuda"):
        _, _, idx = device.partition(":")
        return int(idx or 0)
    raise TypeError(f"device must be a CUDA device id, cupy.cuda.Device, torch.device or 'cuda:N', not {device!r}")


def _as_cupy_stream(stream, cupy):
    """A CuPy stream object for a CuPy stream, a torch.cuda.Stream or a raw handle."""
    if isinstance(stream, (cupy.cuda.Stream, cupy.cuda.ExternalStream)):
        return stream
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        dev = getattr(stream, "device", None)
        return cupy.cuda.ExternalStream(int(stream.cuda_stream), _device_id(dev, cupy) if dev is not None else -1)
    if isinstance(stream, (int, np.integer)):
        return cupy.cuda.ExternalStream(int(stream))
    raise TypeError(f"stream must be a cupy or torch CUDA stream, not {type(stream).__name__}")


def _stream_device(stream) -> int | None:
    dev = getattr(stream, "device_id", None)
    return int(dev) if dev is not None and int(dev) >= 0 else None


# ---- the backend ---------------------------------------------------------------------------
class CudaBackend:
    """base.Backend for CUDA: cupy / torch CUDA arrays in place, numpy uploaded."""

    name = "cuda"

    def unavailable_reason(self) -> str | None:
        return unavailable_reason()

    def _require(self):
        cupy = _READY.get("cupy")
        if cupy is not None:
            return cupy
        reason = unavailable_reason()
        if reason is not None:
            raise CudaUnavailable(f"the CUDA backend cannot run: {reason}")
        cupy = _import_cupy()
        _READY["cupy"] = cupy  # checked once per process: later calls skip the driver queries
        return cupy

    def owns(self, array) -> bool:
        module = type(array).__module__.split(".")[0]
        if module == "torch":
            return bool(getattr(array, "is_cuda", False))
        return module == "cupy" or hasattr(array, "__cuda_array_interface__")

    def to_native(self, array):
        """(cupy array, converter back to the caller's kind).

        The converter accepts cupy arrays (results) and numpy arrays (clreduce.api's
        empty-reduction results) and returns the caller's kind on the caller's device.
        """
        _close_scope()
        module = type(array).__module__.split(".")[0]
        if module == "torch":
            name = str(array.dtype).replace("torch.", "")
            _check_dtype(_TORCH_NAMES.get(name, name), str(array.dtype))
            if not array.is_cuda:
                cupy = self._require()
                native = cupy.asarray(array.detach().numpy())
                return self._enter(native, None, _to_torch_host(array))
            cupy = self._require()
            tensor = array.detach()
            stream = _torch_stream(tensor, cupy)
            with cupy.cuda.Device(tensor.device.index):
                native = cupy.from_dlpack(tensor)
            return self._enter(native, stream, _to_torch(tensor))
        if module == "cupy" or hasattr(array, "__cuda_array_interface__"):
            cupy = self._require()
            native = array if module == "cupy" else cupy.asarray(array)
            _check_native_dtype(native.dtype)
            return self._enter(native, None, _to_cupy(native.device.id, cupy))
        if module == "pyopencl":
            raise TypeError("pyopencl arrays live on an OpenCL device; pass backend='opencl' "
                            "or move the data yourself (arr.get())")
        host = np.asarray(array)
        _check_dtype(host.dtype.name, str(host.dtype))
        cupy = self._require()
        native = cupy.asarray(host)
        return self._enter(native, None, _to_numpy)

    def _enter(self, native, stream, convert):
        """Record the call's device and stream; make them CuPy's current ones until the
        converter runs when they differ (clreduce.api finishes the result with CuPy ops)."""
        import cupy

        device = native.device.id
        scope = None
        current = cupy.cuda.get_current_stream()
        if device != cupy.cuda.Device().id or (stream is not None and stream.ptr != current.ptr):
            scope = contextlib.ExitStack()
            scope.enter_context(cupy.cuda.Device(device))
            if stream is not None:
                scope.enter_context(stream)
        _tls.state = _CallState(native, device, stream, scope)

        def back(result):
            try:
                return convert(result)
            finally:
                _close_scope()

        return native, back

    # ---- layout and reduce (clreduce.api's protocol) ------------------------------------
    def layout(self, native, axes, *, stream=None, device=None, **options):
        """(source, outer, K, inner) for the reduce: the array itself when the reduced axes
        are one adjacent block of a C-contiguous array (``inner > 1`` runs the strided
        ``reduce_cols`` kernels in place), else one device-side copy in C order with the
        reduced axes moved last (``inner == 1``)."""
        import cupy

        if options:
            raise TypeError(f"unexpected options for the CUDA backend: {sorted(options)} (known: stream, device)")
        axes = tuple(axes)
        shape = native.shape
        state = _state_for(native)
        adjacent = bool(axes) and axes == tuple(range(axes[0], axes[-1] + 1))
        if adjacent and native.flags.c_contiguous:
            src = native
            outer = math.prod(shape[:axes[0]])
            k = math.prod(shape[axes[0]:axes[-1] + 1])
            inner = math.prod(shape[axes[-1] + 1:])
        else:
            kept = [i for i in range(native.ndim) if i not in axes]
            outer = math.prod(shape[i] for i in kept)
            k = math.prod(shape[i] for i in axes)
            inner = 1
            dev = state.device if state else native.device.id
            s = _as_cupy_stream(stream, cupy) if stream is not None else (state.stream if state else None)
            with cupy.cuda.Device(dev), (s or contextlib.nullcontext()):
                src = cupy.ascontiguousarray(native.transpose(kept + list(axes)))
        if state is not None:
            state.array = src
        return src, outer, k, inner

    def reduce(self, src, problem: Problem, *, force: Force | None = None, stream=None, device=None, **options):
        """Run the plan on a C-contiguous cupy array; a cupy array of the plan's device output
        dtype (``outer * inner`` values) on the array's device and the call's stream.

        Options: ``stream`` (cupy or torch CUDA stream; default: the caller's, see the module
        doc), ``device`` (must be the array's device: ValueError otherwise).
        """
        if options:
            raise TypeError(f"unexpected options for the CUDA backend: {sorted(options)} (known: stream, device)")
        cupy = self._require()
        if not isinstance(src, cupy.ndarray):
            raise TypeError(f"the CUDA backend reduces cupy arrays, not {type(src).__name__}")
        dev = src.device.id
        if device is not None and _device_id(device, cupy) != dev:
            raise ValueError(f"the array is on CUDA device {dev} but device={device!r} was asked for; "
                             "arrays and streams of one call must be on one device")
        state = _state_for(src)
        if stream is not None:
            stream = _as_cupy_stream(stream, cupy)
        elif state is not None and state.stream is not None:
            stream = state.stream
        sdev = _stream_device(stream) if stream is not None else None
        if sdev is not None and sdev != dev:
            raise ValueError(f"the array is on CUDA device {dev} but the stream belongs to device {sdev}")
        if not src.flags.c_contiguous:
            raise ValueError("the CUDA backend reduces C-contiguous arrays (layout() makes them)")
        launcher = _launcher(dev, problem, _merged_force(force))
        with cupy.cuda.Device(dev):
            if stream is None:
                return launcher(src, cupy)
            with stream:
                return launcher(src, cupy)

    def from_host(self, host, like, *, stream=None, device=None, **options):
        """``host`` (numpy) on ``like``'s device, ordered on the call's stream."""
        import cupy

        state = _state_for(like)
        dev = like.device.id if hasattr(like, "device") and hasattr(like.device, "id") else _device_id(device, cupy)
        s = _as_cupy_stream(stream, cupy) if stream is not None else (state.stream if state else None)
        with cupy.cuda.Device(dev), (s or contextlib.nullcontext()):
            return cupy.asarray(host)

    def write_out(self, out, result) -> None:
        """Copy ``result`` (cupy) into the caller's ``out=``: a cupy array or CUDA torch tensor
        on the same device (ValueError otherwise), or a numpy array."""
        import cupy

        if isinstance(out, np.ndarray):
            out[...] = result.get() if isinstance(result, cupy.ndarray) else result
            return
        if _is_torch(out):
            import torch

            if not out.is_cuda:
                out.copy_(torch.from_numpy(np.ascontiguousarray(result.get())))
                return
            if out.device.index != result.device.id:
                raise ValueError(f"out= is on CUDA device {out.device.index} but the result is on device "
                                 f"{result.device.id}")
            out.copy_(torch.from_dlpack(result))
            return
        if not isinstance(out, cupy.ndarray):
            raise TypeError(f"out must be a cupy array, a torch tensor or a numpy array, not {type(out).__name__}")
        if out.device.id != result.device.id:
            raise ValueError(f"out= is on CUDA device {out.device.id} but the result is on device {result.device.id}")
        with cupy.cuda.Device(out.device.id):
            out[...] = result

    def caps(self, device=None):
        cupy = self._require()
        return probe_device(_device_id(device, cupy))

    def fast_launcher(self, a, native, problem: Problem, force, out_shape: tuple, where: dict, expected=None):
        """A ready launcher for calls like this one (clreduce/fastpath.py), or None.
        ``expected`` (the full path's result for ``a``) is what a first run must give."""
        from .fast import fast_launcher

        return fast_launcher(a, native, problem, force, out_shape, where, expected)


def _to_numpy(result):
    if isinstance(result, np.ndarray) or np.isscalar(result):
        return result
    host = result.get()
    return host[()] if host.ndim == 0 else host


def _to_cupy(device_id, cupy):
    def convert(result):
        if isinstance(result, np.ndarray) or np.isscalar(result):
            with cupy.cuda.Device(device_id):
                return cupy.asarray(result)
        return result

    return convert


def _to_torch(tensor):
    def convert(result):
        import torch

        if isinstance(result, np.ndarray) or np.isscalar(result):
            return torch.as_tensor(np.asarray(result), device=tensor.device)
        return torch.from_dlpack(result)

    return convert


def _to_torch_host(tensor):
    def convert(result):
        import torch

        host = np.asarray(result) if isinstance(result, np.ndarray) or np.isscalar(result) else result.get()
        return torch.from_numpy(np.ascontiguousarray(host))

    return convert


class CudaKernelMissing(NotImplementedError):
    """The plan needs a kernel family that has no CUDA twin yet."""


_ENV_NAMES = ("CLREDUCE_SG_MODE", "CLREDUCE_SG_SIZE", "CLREDUCE_STRATEGY", "CLREDUCE_WG_SIZE", "CLREDUCE_VEC")
# Bounded LRUs (CLREDUCE_CACHE_SIZE); each takes its own lock, and a value two threads
# build at once is built twice and stored once (both are equal), so no other lock is needed.
_forces = LRU(256)


_ENV_KEYS = tuple(name.encode() for name in _ENV_NAMES)


def _env_values() -> tuple:
    data = getattr(os.environ, "_data", None)  # CPython's raw dict: a get is ~20x cheaper
    if os.name == "posix" and isinstance(data, dict):
        return tuple(data.get(key) for key in _ENV_KEYS)
    return tuple(os.environ.get(name) for name in _ENV_NAMES)


def _merged_force(force: Force | None) -> Force:
    """``force`` over the CLREDUCE_* overrides (memoised on the variables' values)."""
    key = (force, _env_values())
    merged = _forces.get(key)
    if merged is None:
        merged = _forces.put(key, (force or Force()).merged(config.forced_plan()))
    return merged


_prepared = LRU(lambda: 4 * config.cache_size())


def _plan_and_kernels(device_id: int, problem: Problem, force: Force):
    """(plan, kernels) for a problem on a device: planned and built once per process (per
    tune-cache generation). A winner ``clreduce tune --backend cuda`` stored for the problem's
    bucket replaces the planner's choice when nothing is forced and ``CLREDUCE_TUNE`` is not 0;
    one that no longer plans or builds falls back to the planner's plan with a warning."""
    key = (device_id, problem, force, tuning.generation())
    hit = _prepared.get(key)
    if hit is None:
        caps = probe_device(device_id)
        tuned = tuning.tuned_force(caps, problem, force)
        if tuned is not None and tuned != force:
            try:
                launch_plan = cuda_plan(caps, problem, tuned)
                hit = (launch_plan, _kernels_for(device_id, launch_plan))
            except Exception as exc:  # noqa: BLE001 - a stale winner must never fail a call
                import warnings

                warnings.warn(f"tuned plan {tuned} no longer runs on CUDA device {device_id} ({exc}); using the "
                              "planner's plan (re-run `clreduce tune --backend cuda`)", RuntimeWarning, stacklevel=3)
        if hit is None:
            launch_plan = cuda_plan(caps, problem, force)
            hit = (launch_plan, _kernels_for(device_id, launch_plan))
        hit = _prepared.put(key, hit)
    return hit


class _Launcher:
    """Everything one (device, problem, force) needs per call, resolved once: the raw CuPy
    Functions, grids, blocks and scalar arguments. A call allocates the output (and
    partials) from CuPy's pool and enqueues the passes on the current stream."""

    __slots__ = ("plan", "steps", "rows", "out_dtype", "partials_bytes", "words")

    def __init__(self, device_id: int, problem: Problem, force: Force):
        import cupy

        self.plan, kernels = _plan_and_kernels(device_id, problem, force)
        self.rows = problem.rows * problem.inner
        self.words = self.plan.out_words
        self.out_dtype = np.dtype(self.plan.device_out_dtype)
        self.partials_bytes = 0
        if len(self.plan.passes) > 1:
            self.partials_bytes = getattr(self.plan, "partials_bytes", 0) or \
                problem.rows * self.plan.split * np.dtype(self.plan.acc_dtype).itemsize
        steps = []
        with cupy.cuda.Device(device_id):
            for launch, kernel in zip(self.plan.passes, kernels):
                scalars = tuple(_scalar_arg(kind, value, launch) for _, kind, value in launch.scalars)
                steps.append((kernel.kernel, (launch.global_size // launch.local_size,), (launch.local_size,),
                              launch.reads, launch.writes, scalars))
        self.steps = tuple(steps)

    def __call__(self, src, cupy):
        out = cupy.empty(self.rows * self.words, dtype=self.out_dtype)
        buffers = {"input": src, "output": out}
        if self.partials_bytes:
            buffers["partials"] = cupy.empty(self.partials_bytes, dtype=np.uint8)
        for fn, grid, block, reads, writes, scalars in self.steps:
            fn(grid, block, (buffers[reads], _ZERO, buffers[writes], _ZERO) + scalars)
        if self.words != 1:
            # exact two-word integer sums: rounded to float64 on the host (the API moves the
            # result back to the device)
            return wide_sums_to_float64(out.get(), signed=self.plan.acc_dtype == "int64")
        return out


_ZERO = np.uint64(0)
_launchers = LRU(lambda: 4 * config.cache_size())


def _launcher(device_id: int, problem: Problem, force: Force) -> _Launcher:
    key = (device_id, problem, force, tuning.generation())
    hit = _launchers.get(key)
    if hit is None:
        hit = _launchers.put(key, _Launcher(device_id, problem, force))
    return hit


def _scalar_arg(kind: str, value, launch):
    if kind == "u64":
        return np.uint64(value)
    if kind == "acc":
        return np.dtype(launch.acc_dtype).type(value)
    raise ValueError(f"unknown scalar kind {kind!r} in {launch.entry}")


def _kernels_for(device_id: int, launch_plan: LaunchPlan) -> list:
    kernels = []
    for launch in launch_plan.passes:
        try:
            kernel = get_kernel(device_id, launch.kernel_file, launch.entry, launch.defines)
        except FileNotFoundError as exc:
            raise CudaKernelMissing(
                f"{launch.kernel_file} ({launch.entry}) has no CUDA twin yet, so this reduction "
                f"(strategy {launch_plan.strategy}) cannot run on the CUDA backend; use backend='opencl'"
            ) from exc
        limit = kernel.attributes["max_threads_per_block"]
        if limit < launch.local_size:
            raise RuntimeError(f"compiled {launch.entry} allows {limit} threads per block, the plan needs "
                               f"{launch.local_size}")
        kernels.append(kernel)
    return kernels


class PreparedReduction:
    """Plan, kernels and buffers for one reduction of a cupy array; ``run`` launches it on
    CuPy's current stream and may be called again (benchmarks)."""

    def __init__(self, rows2d, problem: Problem, force: Force | None = None, *, device_id: int | None = None,
                 launch_plan: LaunchPlan | None = None):
        import cupy

        self.device_id = rows2d.device.id if device_id is None else device_id
        self.rows2d = rows2d
        self.problem = problem
        if launch_plan is None:
            self.plan, self.kernels = _plan_and_kernels(self.device_id, problem, _merged_force(force))
        else:
            self.plan, self.kernels = launch_plan, _kernels_for(self.device_id, launch_plan)
        self.out = cupy.empty(problem.rows * problem.inner * self.plan.out_words, dtype=self.plan.device_out_dtype)
        self.partials = None
        if len(self.plan.passes) > 1:
            nbytes = getattr(self.plan, "partials_bytes", 0) or \
                problem.rows * self.plan.split * np.dtype(self.plan.acc_dtype).itemsize
            self.partials = cupy.empty(nbytes, dtype=np.uint8)
        self._args = []
        buffers = {"input": self.rows2d, "output": self.out, "partials": self.partials}
        for launch in self.plan.passes:
            scalars = [_scalar_arg(kind, value, launch) for _name, kind, value in launch.scalars]
            self._args.append((buffers[launch.reads], np.uint64(0), buffers[launch.writes], np.uint64(0), *scalars))

    def resident_blocks(self) -> list[int]:
        """Blocks per SM the occupancy API allows for each pass (for reports)."""
        return [blocks_per_sm(k, p.local_size, self.device_id) for k, p in zip(self.kernels, self.plan.passes)]

    def run(self):
        for launch, kernel, args in zip(self.plan.passes, self.kernels, self._args):
            kernel((launch.global_size // launch.local_size,), (launch.local_size,), args)
        return self.out


BACKEND = CudaBackend()
