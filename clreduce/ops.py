"""The closed table of reductions and their dtype rules (numpy's, for numpy inputs)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Op:
    """One reduction.

    Attributes
    ----------
    name : str
        Public name (``"mean"``).
    combine : {"sum", "max", "min"}
        How two partial results merge; picks ``OP_SUM`` / ``OP_MAX`` / ``OP_MIN``.
    mean : bool
        Divide by the number of reduced elements at the end.
    empty : {"identity", "nan", "error"}
        What an empty reduction gives, as numpy does: sum -> 0, mean -> nan with a
        RuntimeWarning, max/min -> ValueError.
    """

    name: str
    combine: str
    mean: bool
    empty: str


OPS = {
    "sum": Op("sum", "sum", mean=False, empty="identity"),
    "mean": Op("mean", "sum", mean=True, empty="nan"),
    "max": Op("max", "max", mean=False, empty="error"),
    "min": Op("min", "min", mean=False, empty="error"),
}

# numpy dtype -> OpenCL C type name. bool is read as uchar (numpy stores it as 0/1 bytes).
CL_TYPE = {
    "bool": "uchar",
    "int8": "char",
    "uint8": "uchar",
    "int16": "short",
    "uint16": "ushort",
    "int32": "int",
    "uint32": "uint",
    "int64": "long",
    "uint64": "ulong",
    "float16": "half",
    "float32": "float",
    "float64": "double",
}

SUPPORTED_DTYPES = tuple(CL_TYPE)


@dataclass(frozen=True)
class DtypeRule:
    """Types of one (op, input dtype) pair.

    ``acc`` is what the device accumulates in, ``device_out`` what the kernel writes,
    ``out`` what the user gets. ``host_divide`` means the device writes an exact integer
    sum and the host divides in float64 (integer mean, as numpy computes it).
    """

    acc: str
    device_out: str
    out: str
    host_divide: bool = False


def dtype_rule(op: Op, dtype: np.dtype) -> DtypeRule:
    """Accumulator and output dtypes of ``op`` on ``dtype``, following numpy.

    Raises
    ------
    TypeError
        For dtypes clreduce does not reduce (object, complex, strings, datetimes, ...).
    """
    dtype = np.dtype(dtype)
    name = dtype.name
    if name not in CL_TYPE:
        raise TypeError(
            f"clreduce.{op.name} does not support dtype {dtype!s} "
            f"(supported: {', '.join(SUPPORTED_DTYPES)})"
        )
    if dtype.kind == "f":
        # float16 accumulates in float32: fp16 sums pass 65504 and overflow to inf.
        acc = "float32" if name == "float16" else name
        return DtypeRule(acc=acc, device_out=name, out=name)
    # integers and bool
    wide = "uint64" if dtype.kind == "u" else "int64"
    if op.combine == "sum":
        if op.mean:
            return DtypeRule(acc=wide, device_out=wide, out="float64", host_divide=True)
        return DtypeRule(acc=wide, device_out=wide, out=wide)
    # max/min: 8/16-bit values travel through a 32-bit accumulator because sub-group
    # collectives on char/short need cl_khr_subgroup_extended_types.
    acc = name if dtype.itemsize >= 4 else ("uint32" if dtype.kind in "ub" else "int32")
    return DtypeRule(acc=acc, device_out=name, out=name)
