"""Where kernel sources live, their hashes, and the one function that writes build options.

A kernel family is one ``.cl`` file in ``cl_kernels/``; both backends compile that text, each
behind its dialect header (``cl_dialect_opencl.h`` or ``cl_dialect_cuda.h``), which gives the
portable words the kernels use their meaning on that API (see ``cl_kernels/README.md``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent

DIALECT_HEADERS = {"opencl": "cl_dialect_opencl.h", "cuda": "cl_dialect_cuda.h"}

# Options every CUDA build gets beside the -D list. -lineinfo costs nothing at run time and
# lets ncu point at source lines.
CUDA_BASE_OPTIONS = ("--std=c++17", "-lineinfo")


def kernel_dirs() -> list[Path]:
    """Folders searched for kernel files: CLREDUCE_KERNEL_DIR (if set), the wheel's copy,
    then the repository's."""
    from . import config

    override = config.kernel_dir()
    return ([Path(override)] if override else []) + [_PACKAGE_DIR / "cl_kernels", _PACKAGE_DIR.parent / "cl_kernels"]


def kernel_path(filename: str) -> Path:
    """Path of a kernel file or dialect header (``reduce_rows.cl``, ``cl_dialect_cuda.h``)."""
    return _kernel_path(filename, tuple(kernel_dirs()))


def _kernel_path(filename: str, dirs: tuple[Path, ...]) -> Path:
    for folder in dirs:
        path = folder / filename
        if path.is_file():
            return path
    searched = ", ".join(str(d) for d in dirs)
    raise FileNotFoundError(f"kernel source {filename!r} not found (searched {searched})")


@functools.lru_cache(maxsize=64)
def _read(filename: str, dirs: tuple[Path, ...]) -> str:
    return _kernel_path(filename, dirs).read_text(encoding="utf-8")


def read_source(filename: str, api: str = "opencl") -> str:
    """Program text for ``api`` ("opencl" or "cuda"): the dialect header, then the kernel file.

    Read once per (file, folder list): CLREDUCE_KERNEL_DIR changes which copy is read.
    """
    return _read_source(filename, api, tuple(kernel_dirs()))


@functools.lru_cache(maxsize=64)
def _read_source(filename: str, api: str, dirs: tuple[Path, ...]) -> str:
    """Program text for ``api`` ("opencl" or "cuda"): the dialect header, then the kernel file.

    The header travels as text rather than through an include path, so the source hash (and
    CuPy's on-disk kernel cache, keyed by source) changes when the header does. ``#line``
    keeps compiler messages on the kernel file's own line numbers.
    """
    if api not in DIALECT_HEADERS:
        raise ValueError(f"unknown kernel API {api!r}; expected one of {sorted(DIALECT_HEADERS)}")
    return f"{_read(DIALECT_HEADERS[api], dirs)}\n#line 1\n{_spliced(filename, dirs, ())}"


def kernel_text(filename: str) -> str:
    """``filename``'s text with its includes spliced in, without a dialect header (tools that
    put several variants in one translation unit prepend the header once themselves)."""
    return _spliced(filename, tuple(kernel_dirs()), ())


# `#include "name"` of a file of this folder (row_common.h): replaced by the file's text.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$')


def _spliced(filename: str, dirs: tuple[Path, ...], stack: tuple[str, ...]) -> str:
    """``filename``'s text with each quoted include replaced by the included file's text.

    Shared kernel code travels inside the program string, like the dialect header: the
    source hash (and with it the OpenCL and CuPy program caches) changes when a shared file
    does, and no build needs an include path (an installed wheel has none to give). ``#line``
    keeps compiler messages on each file's own line numbers.
    """
    if filename in stack:
        raise ValueError(f"kernel include cycle: {' -> '.join(stack + (filename,))}")
    lines = _read(filename, dirs).split("\n")
    for number, line in enumerate(lines):
        match = _INCLUDE.match(line)
        if match:
            name = match.group(1)
            lines[number] = (f'#line 1 "{name}"\n{_spliced(name, dirs, stack + (filename,))}\n'
                             f'#line {number + 2} "{filename}"')
    return "\n".join(lines)


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build_options(defines: dict[str, object] | tuple[tuple[str, str], ...], cl_std: str | None = None,
                  api: str = "opencl") -> tuple[str, ...]:
    """Compiler options for a kernel build, for either API.

    ``-DNAME=VALUE`` sorted by name, then for OpenCL ``-cl-std`` (when given), for CUDA the
    NVRTC options every build gets. Sorting makes equal plans produce equal option strings,
    so program caches key stably.
    """
    items = defines.items() if isinstance(defines, dict) else defines
    options = [f"-D{name}={value}" for name, value in sorted((str(k), str(v)) for k, v in items)]
    if api == "cuda":
        return tuple(options) + CUDA_BASE_OPTIONS
    if api != "opencl":
        raise ValueError(f"unknown kernel API {api!r}; expected 'opencl' or 'cuda'")
    if cl_std:
        options.append(f"-cl-std={cl_std}")
    return tuple(options)
