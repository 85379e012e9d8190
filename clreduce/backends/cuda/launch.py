"""Build and launch CUDA kernels through CuPy (RawKernel over NVRTC).

``cuda_source`` and ``nvrtc_options`` are pure (the PTX tool uses them with nvcc on
machines without a GPU); everything else imports CuPy inside the function.
"""

from __future__ import annotations

import threading

from ... import config
from ...kernels import build_options, read_source, source_hash
from ...lru import LRU

CUDA_API = "cuda"


def cuda_source(kernel_file: str) -> str:
    """``kernel_file`` (``reduce_rows.cl``) as CUDA: cl_dialect_cuda.h, then the file itself."""
    return read_source(kernel_file, CUDA_API)


def nvrtc_options(defines) -> tuple[str, ...]:
    """``-DNAME=VALUE`` for every define, sorted, then the NVRTC base options (stable cache keys)."""
    return build_options(defines, api=CUDA_API)


_lock = threading.Lock()  # one NVRTC build at a time; lookups take only the LRU's own lock
_kernels = LRU(config.cache_size)


def get_kernel(device_id: int, kernel_file: str, entry: str, defines):
    """The compiled kernel for (device, source hash, options), built once per process.

    CuPy also keeps compiled binaries on disk (~/.cupy/kernel_cache), so a new process
    skips NVRTC for kernels built before.
    """
    import cupy

    source = cuda_source(kernel_file)
    options = nvrtc_options(defines)
    key = (device_id, source_hash(source), options, entry)
    kernel = _kernels.get(key)
    if kernel is None:
        with _lock:
            kernel = _kernels.get(key)
            if kernel is None:
                with cupy.cuda.Device(device_id):
                    raw = cupy.RawKernel(source, entry, options=options, backend="nvrtc")
                    try:
                        raw.compile()
                    except cupy.cuda.compiler.CompileException as exc:
                        raise RuntimeError(
                            f"building {kernel_file} as CUDA with {' '.join(options)} failed:\n{exc}"
                        ) from exc
                kernel = _kernels.put(key, raw)
    return kernel


def blocks_per_sm(kernel, block: int, device_id: int) -> int:
    """Resident blocks per SM for ``kernel`` at ``block`` threads (CUDA occupancy API)."""
    import cupy

    with cupy.cuda.Device(device_id):
        fn = kernel.kernel
        return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, block, 0))


def kernel_attributes(kernel, device_id: int) -> dict:
    import cupy

    with cupy.cuda.Device(device_id):
        return dict(kernel.attributes)
