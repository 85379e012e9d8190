"""Every CLREDUCE_* environment variable, read here and nowhere else.

=========================  ===================================================================
CLREDUCE_DEVICE            default OpenCL device when PYOPENCL_CTX is unset: ``P:D`` indices
                           (as PYOPENCL_CTX) or a case-insensitive substring of the platform or
                           device name, e.g. ``intel`` or ``pocl``
CLREDUCE_BACKEND           ``opencl`` or ``cuda`` for numpy inputs
CLREDUCE_SG_MODE           force ``local`` | ``builtin`` | ``shuffle`` (KHR or qcom, as the
                           device has)
CLREDUCE_SG_SIZE           force a sub-group width (must be one the device can run)
CLREDUCE_STRATEGY          force ``rows_per_sg`` | ``sg_per_row`` | ``wg_per_row`` | ``split_k``
CLREDUCE_WG_SIZE           force the work-group size
CLREDUCE_VEC               force the vector width of loads (1, 2, 4, 8, 16)
=========================  ===================================================================
"""

from __future__ import annotations

import os

from .plan import Force


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
