"""Where kernel sources live, their hashes, and the one function that writes build options."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def kernel_dirs() -> list[Path]:
    """Folders searched for kernel files: CLREDUCE_KERNEL_DIR (if set), the wheel's copy,
    then the repository's."""
    from . import config

    override = config.kernel_dir()
    return ([Path(override)] if override else []) + [_PACKAGE_DIR / "cl_kernels", _PACKAGE_DIR.parent / "cl_kernels"]


def read_source(filename: str) -> str:
    """Text of a kernel file (``reduce_rows.cl``), from the package data or the repo."""
    return _read_source(filename, tuple(kernel_dirs()))


@functools.lru_cache(maxsize=64)
def _read_source(filename: str, dirs: tuple[Path, ...]) -> str:
    for folder in dirs:
        path = folder / filename
        if path.is_file():
            return path.read_text(encoding="utf-8")
    searched = ", ".join(str(d) for d in kernel_dirs())
    raise FileNotFoundError(f"kernel source {filename!r} not found (searched {searched})")


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build_options(defines: dict[str, object] | tuple[tuple[str, str], ...], cl_std: str | None = None) -> tuple[str, ...]:
    """Compiler options for a kernel build: ``-DNAME=VALUE`` sorted by name, then ``-cl-std``.

    Sorting makes equal plans produce equal option strings, so program caches key stably.
    """
    items = defines.items() if isinstance(defines, dict) else defines
    options = [f"-D{name}={value}" for name, value in sorted((str(k), str(v)) for k, v in items)]
    if cl_std:
        options.append(f"-cl-std={cl_std}")
    return tuple(options)
