"""Every CLREDUCE_* environment variable, read here and nowhere else.

=========================  ===================================================================
CLREDUCE_DEVICE            default OpenCL device when PYOPENCL_CTX is unset: ``P:D`` indices
                           (as PYOPENCL_CTX) or a case-insensitive substring of the platform or
                           device name, e.g. ``intel`` or ``pocl``
CLREDUCE_BACKEND           ``opencl`` or ``cuda`` for numpy inputs
CLREDUCE_SG_MODE           force ``local`` | ``builtin`` | ``shuffle`` (KHR or qcom, as the
                           device has)
CLREDUCE_SG_SIZE           force a sub-group width (must be one the device can run)
CLREDUCE_STRATEGY          force ``rows_per_sg`` | ``sg_per_row`` | ``wg_per_row`` | ``split_k`` | ``cpu_blocks``
CLREDUCE_WG_SIZE           force the work-group size
CLREDUCE_VEC               force the vector width of loads (1, 2, 4, 8, 16)
CLREDUCE_CACHE_SIZE        entries each in-process cache keeps (built programs, plans, CUDA
                           kernels and launchers, learned calls of the fast path); least
                           recently used go first. Default 256
CLREDUCE_MAX_ALLOC_BYTES   lower the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE (bytes) for the
                           input buffer: larger inputs run in row chunks (tests use a small value)
CLREDUCE_ZERO_COPY         ``0`` turns off wrapping numpy inputs in place on devices that share
                           host memory (every call then copies the input, as before)
CLREDUCE_KERNEL_DIR        a folder searched for kernel sources before the package's own (tests
                           inject broken kernels through it)
CLREDUCE_LOCK_TIMEOUT      seconds to wait for pyopencl's compiler-cache lock before saying which
                           lock file is stale and how to clear it. Default 5
CLREDUCE_TUNE              ``0`` ignores the winners ``clreduce tune`` stored (the planner's own
                           plans run)
CLREDUCE_TUNE_DIR          folder of the tune cache (default: the user cache directory's
                           ``clreduce/tune``, from platformdirs)
CLREDUCE_FAST_PATH         ``0`` turns off the per-call fast path (every call validates and plans
                           again: A/B timing, or a way around a suspected fast-path bug)
CLREDUCE_CUDA_CACHE_DIR    folder of the CUDA backend's compiled kernels (default: the user cache
                           directory's ``clreduce/cuda``, from platformdirs)
CLREDUCE_CUDA_CACHE_MB     size bound of that folder; the least recently written kernels go
                           first when a new one passes it. Default 512
CLREDUCE_CL_POOL           ``0`` turns off the OpenCL buffer pool (backends/cl_pool.py: GPUs,
                           and results of 4 MB and more on CPU devices): every learned call
                           gets fresh output buffers -- for code that reads results on several
                           queues and drops them before those reads finish (slower: on NVIDIA
                           a release waits, on CPUs a fresh buffer's pages fault in)
=========================  ===================================================================
"""

from __future__ import annotations

import os

from .plan import Force


# Variables a call's plan, kernels or input handling depend on (CLREDUCE_DEVICE and
# CLREDUCE_CACHE_SIZE do not: the default queue is chosen once, the bound is read on insert).
# The per-call fast path (fastpath.py) keys its cache on their raw values.
CALL_ENV = ("CLREDUCE_BACKEND", "CLREDUCE_SG_MODE", "CLREDUCE_SG_SIZE", "CLREDUCE_STRATEGY",
            "CLREDUCE_WG_SIZE", "CLREDUCE_VEC", "CLREDUCE_ZERO_COPY", "CLREDUCE_MAX_ALLOC_BYTES",
            "CLREDUCE_KERNEL_DIR", "CLREDUCE_TUNE", "CLREDUCE_TUNE_DIR", "CLREDUCE_CL_POOL")
_CALL_ENV_KEYS = tuple(name.encode() for name in CALL_ENV)


def fast_path() -> bool:
    """False when ``CLREDUCE_FAST_PATH=0``: every call takes the full path (A/B timing)."""
    data = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(data, dict):
        return data.get(b"CLREDUCE_FAST_PATH") != b"0"
    return os.environ.get("CLREDUCE_FAST_PATH") != "0"


def cl_pool() -> bool:
    """False when ``CLREDUCE_CL_POOL=0``: learned OpenCL calls never reuse output buffers."""
    return os.environ.get("CLREDUCE_CL_POOL") != "0"


_CALL_ENV_FP_KEYS = _CALL_ENV_KEYS + (b"CLREDUCE_FAST_PATH",)
FAST_PATH_OFF = b"0" if os.name == "posix" else "0"


def call_env_and_fast_path() -> tuple:
    """``call_env()`` plus CLREDUCE_FAST_PATH's raw value last (``FAST_PATH_OFF``: off), in
    one read of the environment: the fast path's signature needs both on every call."""
    data = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(data, dict):
        return tuple(map(data.get, _CALL_ENV_FP_KEYS))
    return tuple(os.environ.get(name) for name in CALL_ENV + ("CLREDUCE_FAST_PATH",))


def call_env() -> tuple:
    """The raw values of ``CALL_ENV`` (None where unset): ~1 us, cheap enough for every call."""
    data = getattr(os.environ, "_data", None)  # CPython's raw dict: ~20x cheaper than os.environ.get
    if os.name == "posix" and isinstance(data, dict):
        return tuple(map(data.get, _CALL_ENV_KEYS))
    return tuple(os.environ.get(name) for name in CALL_ENV)


def default_device_selector() -> str | None:
    return os.environ.get("CLREDUCE_DEVICE") or None


def default_backend() -> str | None:
    return os.environ.get("CLREDUCE_BACKEND") or None


def forced_plan() -> Force:
    """The plan override the environment asks for (all fields None when none is set)."""

    def as_int(name: str) -> int | None:
        value = os.environ.get(name)
        if not value:
            return None
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{name}={value!r} is not an integer") from None

    return Force(
        sg_mode=os.environ.get("CLREDUCE_SG_MODE") or None,
        sg_size=as_int("CLREDUCE_SG_SIZE"),
        strategy=os.environ.get("CLREDUCE_STRATEGY") or None,
        wg_size=as_int("CLREDUCE_WG_SIZE"),
        vec=as_int("CLREDUCE_VEC"),
    )


def _int_env(name: str, default: int | None) -> int | None:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None


def cache_size() -> int:
    """Bound of every in-process plan/program cache (CLREDUCE_CACHE_SIZE, default 256)."""
    size = _int_env("CLREDUCE_CACHE_SIZE", 256)
    if size < 1:
        raise ValueError(f"CLREDUCE_CACHE_SIZE={size} must be at least 1")
    return size


def max_alloc_bytes() -> int | None:
    """CLREDUCE_MAX_ALLOC_BYTES, or None when unset."""
    size = _int_env("CLREDUCE_MAX_ALLOC_BYTES", None)
    if size is not None and size < 64:
        raise ValueError(f"CLREDUCE_MAX_ALLOC_BYTES={size} must be at least 64")
    return size


def zero_copy() -> bool:
    """False when CLREDUCE_ZERO_COPY=0: numpy inputs are always copied to the device."""
    return os.environ.get("CLREDUCE_ZERO_COPY", "1") != "0"


def kernel_dir() -> str | None:
    return os.environ.get("CLREDUCE_KERNEL_DIR") or None


def lock_timeout() -> float:
    value = os.environ.get("CLREDUCE_LOCK_TIMEOUT")
    try:
        return float(value) if value else 5.0
    except ValueError:
        raise ValueError(f"CLREDUCE_LOCK_TIMEOUT={value!r} is not a number") from None


def tune_enabled() -> bool:
    """False when ``CLREDUCE_TUNE`` is ``0``/``off``/``false``/``no``."""
    return os.environ.get("CLREDUCE_TUNE", "1").strip().lower() not in ("0", "off", "false", "no")


def tune_dir() -> str | None:
    return os.environ.get("CLREDUCE_TUNE_DIR") or None


def cuda_cache_dir() -> str | None:
    return os.environ.get("CLREDUCE_CUDA_CACHE_DIR") or None


def cuda_cache_bytes() -> int:
    """Bound of the CUDA kernel folder in bytes (CLREDUCE_CUDA_CACHE_MB, default 512)."""
    mb = _int_env("CLREDUCE_CUDA_CACHE_MB", 512)
    if mb < 1:
        raise ValueError(f"CLREDUCE_CUDA_CACHE_MB={mb} must be at least 1")
    return mb << 20
