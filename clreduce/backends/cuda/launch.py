"""Build and launch CUDA kernels: NVRTC through CuPy's bindings, loaded as CuPy modules.

Not ``cupy.RawKernel``: CuPy appends ``-ftz=true`` to every NVRTC build after the caller's
options (cupy/cupy#9576), so float32 subnormals became 0 in every kernel: ``all`` and
``count_nonzero`` of values below 1.2e-38 said False / 0, ``argmax`` / ``max`` / ``nanmax`` of
them answered index 0 or 0.0 (an outside fuzz run on an H100, 2026-11-27). clreduce compiles
the same source with its own options (IEEE subnormals, as numpy, torch and the OpenCL CPU
runtimes keep them) to a cubin for the device, and keeps the cubin on disk
(``<user cache>/clreduce/cuda``, ``CLREDUCE_CUDA_CACHE_DIR``) so a new process skips NVRTC, as
CuPy's own kernel cache did; unlike CuPy's, the folder is bounded (``CLREDUCE_CUDA_CACHE_MB``,
default 512: the least recently written cubins go when a new one passes it).

``cuda_source`` and ``nvrtc_options`` are pure (the PTX tool uses them with nvcc on
machines without a GPU); everything else imports CuPy inside the function.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from ... import config
from ...kernels import build_options, read_source, source_hash
from ...lru import LRU

CUDA_API = "cuda"


def cuda_source(kernel_file: str) -> str:
    """``kernel_file`` (``reduce_rows.cl``) as CUDA: cl_dialect_cuda.h, then the file itself."""
    return read_source(kernel_file, CUDA_API)


# HALF_FTZ: float16 in, float16 out. Every float16 value and every partial sum of them is a
# multiple of 2^-24, normal in float32; a float32 subnormal (exp of a very negative number, a
# product of tiny terms) lies 2^100 below float16's least subnormal, so flushing it cannot move
# a float16 result (products that come back from there are rescued as mantissa and exponent,
# frexp_walk.h). Flushed, rms_norm of 648720 x 128 float16 ran 4.5 % faster on an H100
# (benchmarks/cuda_subnormals_h100_2026-11-27).
def nvrtc_options(defines) -> tuple[str, ...]:
    """``-DNAME=VALUE`` for every define, sorted, then the NVRTC base options (stable cache keys),
    and ``-ftz=true`` for kernels with float16 input and output (HALF_FTZ)."""
    options = build_options(defines, api=CUDA_API)
    values = dict((str(k), str(v)) for k, v in (defines.items() if isinstance(defines, dict) else defines))
    if values.get("IN_HALF") == "1" and values.get("OUT_HALF") == "1":
        options += ("-ftz=true",)
    return options


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
                    kernel = _kernels.put(key, _build(cupy, device_id, kernel_file, source, entry, options))
    return kernel


# CUfunction_attribute values (cuda.h), under the names cupy.RawKernel.attributes uses
_ATTRIBUTES = {"max_threads_per_block": 0, "shared_size_bytes": 1, "const_size_bytes": 2,
               "local_size_bytes": 3, "num_regs": 4, "ptx_version": 5, "binary_version": 6}


class CompiledKernel:
    """One kernel of a loaded cubin, used as a ``cupy.RawKernel`` is: called with (grid,
    block, args) on CuPy's current stream, ``.kernel`` the ``cupy.cuda.function.Function``
    (``.ptr`` for cuLaunchKernel and the occupancy API), ``.attributes`` a dict."""

    __slots__ = ("module", "kernel", "attributes")

    def __init__(self, cupy, module, entry: str):
        self.module = module  # the function lives while its module is loaded
        self.kernel = module.get_function(entry)
        self.attributes = {name: cupy.cuda.driver.funcGetAttribute(code, self.kernel.ptr)
                           for name, code in _ATTRIBUTES.items()}

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        return self.kernel(grid, block, args, shared_mem=shared_mem, stream=stream)


def _build(cupy, device_id: int, kernel_file: str, source: str, entry: str, options) -> CompiledKernel:
    """``source`` compiled for the device (or read from the disk cache) and loaded."""
    from cupy.cuda import nvrtc

    cc = cupy.cuda.Device(device_id).compute_capability
    version = nvrtc.getVersion()
    # a cubin for the device; where this NVRTC predates it, PTX of the virtual architecture
    # (the driver compiles it at load time, as CuPy does there)
    for arch, output in ((f"-arch=sm_{cc}", nvrtc.getCUBIN), (f"-arch=compute_{cc}", nvrtc.getPTX)):
        opts = tuple(options) + (arch,)
        cached = _cache_path(source, entry, opts, version)
        binary = _read_cached(cached)
        if binary is None:
            binary, log = _nvrtc(nvrtc, source, f"{kernel_file}.cu", opts, output)
            if binary is None:
                continue
            _write_cached(cached, binary)
        module = cupy.cuda.function.Module()
        module.load(binary)
        return CompiledKernel(cupy, module, entry)
    raise RuntimeError(f"building {kernel_file} as CUDA with {' '.join(opts)} failed:\n{log}")


def _nvrtc(nvrtc, source: str, name: str, options, output):
    """(the build's ``output``, None) or (None, NVRTC's log)."""
    prog = nvrtc.createProgram(source, name, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError:
            return None, nvrtc.getProgramLog(prog)
        binary = output(prog)
        return (binary.encode() if isinstance(binary, str) else bytes(binary)), None
    finally:
        nvrtc.destroyProgram(prog)


def cache_dir() -> Path:
    """``CLREDUCE_CUDA_CACHE_DIR``, else ``platformdirs.user_cache_dir("clreduce")/cuda``."""
    override = config.cuda_cache_dir()
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("clreduce")) / "cuda"


def _cache_path(source: str, entry: str, options, nvrtc_version) -> Path:
    key = "\0".join((source, entry, *options, repr(nvrtc_version))).encode()
    return cache_dir() / f"{hashlib.sha256(key).hexdigest()}.cubin"


# a cubin file: this header, its length and sha256, then the cubin (a torn or corrupt file is
# rebuilt, never loaded)
_MAGIC = b"clreduce-cubin-1\n"


def _read_cached(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    body = data[head:]
    if data[:len(_MAGIC)] != _MAGIC or hashlib.sha256(body).digest() != data[len(_MAGIC):head]:
        return None
    return body


def _write_cached(path: Path, binary: bytes) -> None:
    """Atomically (a temporary file, then rename), then the folder trimmed to its bound; a
    cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(_MAGIC + hashlib.sha256(binary).digest() + binary)
        os.replace(tmp.name, path)
        _trim(path.parent, config.cuda_cache_bytes(), keep=path)
    except OSError:
        pass


def _trim(folder: Path, limit: int, keep: Path) -> None:
    """Delete the least recently written cubins of ``folder`` (never ``keep``, the one just
    written) until the rest fit in ``limit`` bytes. A file another process removes first is
    skipped; one it is reading stays readable (POSIX unlink)."""
    entries = []
    for item in folder.glob("*.cubin"):
        try:
            st = item.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, item))
    total = sum(size for _, size, _ in entries)
    for _, size, item in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if item == keep:
            continue
        try:
            item.unlink()
        except OSError:
            continue
        total -= size


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
