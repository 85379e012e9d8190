"""GPU API backends, in an explicit registry. Importing this package imports no GPU library:
each backend module is imported the first time it is asked for."""

from __future__ import annotations

import importlib

from .base import Backend

# name -> module that defines BACKEND (an object following base.Backend)
REGISTRY = {
    "opencl": "clreduce.backends.opencl",
    "cuda": "clreduce.backends.cuda",
}


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; ValueError listing the names otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown backend {name!r}; registered: {', '.join(sorted(REGISTRY))}")
    return importlib.import_module(REGISTRY[name]).BACKEND


def backend_for(array, requested: str | None = None, env_default: str | None = None) -> Backend:
    """Pick the backend: ``requested``, then CLREDUCE_BACKEND, then the array's kind, then OpenCL."""
    _refuse_numpy_subclasses_we_would_misread(array)
    name = requested or env_default
    if name == "opencl" and _on_cuda(array):
        # said before importing anything: pyopencl may not even be installed beside cupy
        raise TypeError(f"{type(array).__module__}.{type(array).__name__} is a CUDA array and backend='opencl' "
                        "reads host or OpenCL memory; copy it yourself (.get() / .cpu().numpy()) if that is what you want")
    if name:
        backend = get_backend(name)
        if not backend.owns(array) and _foreign_device_array(array):
            raise TypeError(
                f"{type(array).__module__}.{type(array).__name__} lives on another device than backend {name!r}; "
                "move it yourself (e.g. .get() / .cpu().numpy()) if a copy is what you want"
            )
        return backend
    if _on_cuda(array):
        if "cuda" not in REGISTRY:
            raise TypeError(f"{type(array).__module__}.{type(array).__name__} is a CUDA array and no CUDA backend is registered")
        return get_backend("cuda")
    return get_backend("opencl")


def _on_cuda(array) -> bool:
    module = type(array).__module__.split(".")[0]
    if module == "torch":
        return bool(getattr(array, "is_cuda", False))
    return module == "cupy" or hasattr(array, "__cuda_array_interface__")


def _foreign_device_array(array) -> bool:
    """Arrays that live on a GPU (reading them on the host would be a hidden copy)."""
    return _on_cuda(array) or type(array).__module__.split(".")[0] == "pyopencl"


def _refuse_numpy_subclasses_we_would_misread(array) -> None:
    """numpy subclasses whose meaning is more than their data: a masked array's sum skips its
    masked elements and np.matrix keeps 2-D results. clreduce reads the data buffer, so it gave
    the sum of every element and 1-D results (an outside fuzz run, 2026-11-30): refuse them.
    Other subclasses (np.memmap, ...) are plain data and stay welcome."""
    import numpy as np

    if isinstance(array, np.ma.MaskedArray):
        raise TypeError("clreduce does not honour masks: a numpy masked array would be reduced over "
                        "its masked elements too; pass arr.filled(value) or arr.compressed()")
    if isinstance(array, np.matrix):
        raise TypeError("clreduce returns ndarrays, not np.matrix (whose reductions stay 2-D); "
                        "pass np.asarray(m)")
