"""The closed table of reductions and their dtype rules (numpy's, for numpy inputs).

Each ``Op`` is what one kernel pass computes; public functions that need two (``nanmean``
is ``nansum / count_notnan``) compose them in ``api``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Op:
    """One reduction as a kernel computes it.

    Attributes
    ----------
    name : str
    kind : {"scalar", "welford", "arg", "lse"}
        Running value: one accumulator (``reduce_rows.cl``) or a small struct
        (``reduce_state.cl``: Welford mean/M2/n, value+index, max+scaled sum).
    combine : {"sum", "prod", "max", "min", "nanmax", "nanmin"}
        Merge of two scalar accumulators (``OP_*``); for ``arg`` kind, max or min.
    map : {"none", "abs", "square", "nonzero", "notnan", "nan_to_zero"}
        Applied to each element as loaded (``MAP``).
    finalize : {"none", "mean", "sqrt", "var", "std", "index", "lse"}
    result : {"same", "wide", "float", "bool", "intp"}
        Output dtype rule for integer/bool inputs: same dtype, 64-bit (numpy's sum/prod),
        float64, bool, or numpy's intp. Float inputs keep their dtype except for
        ``bool``/``intp`` results.
    empty : {"identity", "nan", "error", "zero", "one", "neginf"}
        Empty reduction: the op's identity (sum -> 0, prod -> 1), nan with a RuntimeWarning,
        ValueError, a literal 0 / 1 (any/all, counts), or -inf (logsumexp: the log of an
        empty sum, as scipy.special.logsumexp since SciPy 1.14 and torch.logsumexp give).
    """

    name: str
    kind: str
    combine: str
    map: str
    finalize: str
    result: str
    empty: str


def _op(name, kind="scalar", combine="sum", map="none", finalize="none", result="same", empty="identity"):
    return Op(name, kind, combine, map, finalize, result, empty)


OPS = {op.name: op for op in (
    _op("sum", result="wide"),
    _op("mean", finalize="mean", result="float", empty="nan"),
    _op("prod", combine="prod", result="wide"),
    _op("max", combine="max", empty="error"),
    _op("min", combine="min", empty="error"),
    _op("nansum", map="nan_to_zero", result="wide"),
    _op("nanmax", combine="nanmax", empty="error"),
    _op("nanmin", combine="nanmin", empty="error"),
    _op("count_notnan", map="notnan", result="intp", empty="zero"),
    _op("count_nonzero", map="nonzero", result="intp", empty="zero"),
    _op("any", combine="max", map="nonzero", result="bool", empty="zero"),
    _op("all", combine="min", map="nonzero", result="bool", empty="one"),
    _op("norm1", map="abs", result="float"),
    _op("norm2", map="square", finalize="sqrt", result="float"),
    _op("norminf", combine="max", map="abs", result="float", empty="zero"),  # numpy: max(initial=0)
    _op("normneginf", combine="min", map="abs", result="float", empty="error"),
    _op("var", kind="welford", finalize="var", result="float", empty="nan"),
    _op("std", kind="welford", finalize="std", result="float", empty="nan"),
    _op("argmax", kind="arg", combine="max", finalize="index", result="intp", empty="error"),
    _op("argmin", kind="arg", combine="min", finalize="index", result="intp", empty="error"),
    _op("logsumexp", kind="lse", finalize="lse", result="float", empty="neginf"),
)}

# The exact integer sum the planner runs for an integer mean whose 64-bit total could wrap
# (int64/uint64 input, or K large enough for narrower ones): two 64-bit words per result
# (reduce_state.cl, OPK_WIDE), rounded once to float64 on the host. Not a public op.
WIDE_SUM = Op("wide_sum", "wide", "sum", "none", "none", "float", "nan")


def sum_may_wrap(dtype, k: int) -> bool:
    """Whether a 64-bit integer sum of ``k`` elements of ``dtype`` could wrap."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" and 8 * dtype.itemsize + max(int(k) - 1, 1).bit_length() > 63


def wide_sums_to_float64(words, signed: bool) -> np.ndarray:
    """float64 of exact sums held as (lo, hi) 64-bit word pairs, value = hi * 2**64 + lo,
    each rounded once (to nearest, ties to even).

    Sums that fit 64 bits (the common case) convert vectorised; the rest through Python
    integers, whose conversion to float is correctly rounded.
    """
    pairs = np.ascontiguousarray(words).view(np.uint64).reshape(-1, 2)
    lo, hi = pairs[:, 0], pairs[:, 1].view(np.int64)
    if signed:
        low = lo.view(np.int64)
        fits = hi == (low >> 63)  # hi is lo's sign extension: the sum is a valid int64
        out = low.astype(np.float64)
    else:
        fits = hi == 0
        out = lo.astype(np.float64)
    for i in np.flatnonzero(~fits):
        out[i] = float((int(hi[i]) << 64) + int(lo[i]))
    return out


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
    # var/std: the power of two every difference is scaled by (reduce_state.cl SHIFT_SCALE),
    # on every pass: 64-bit integers in float32 (no fp64), so squares fit; floats in their
    # own type, so differences do
    var_scale: str | None = None


def check_dtype(dtype, what: str = "input") -> np.dtype:
    """The dtype, or TypeError naming it when clreduce cannot reduce it."""
    dtype = np.dtype(dtype)
    if dtype.name not in CL_TYPE:
        raise TypeError(f"clreduce does not support {what} dtype {dtype!s} (supported: {', '.join(SUPPORTED_DTYPES)})")
    return dtype


def _float_acc(name: str) -> str:
    # float16 accumulates in float32: fp16 sums pass 65504 and overflow to inf.
    return "float32" if name == "float16" else name


@functools.lru_cache(maxsize=1024)
def dtype_rule(op: Op, dtype, requested=None) -> DtypeRule:
    """Accumulator and output dtypes of ``op`` on ``dtype`` (``requested`` = ``dtype=`` arg).

    Raises
    ------
    TypeError
        For dtypes clreduce does not reduce (object, complex, strings, datetimes, ...).
    """
    dtype = check_dtype(dtype)
    name = dtype.name
    if requested is not None:
        want = check_dtype(requested, "requested")
        if op.result in ("bool", "intp") or op.kind == "arg":
            raise TypeError(f"{op.name} does not take dtype=")
        if want.kind == "b":
            raise TypeError(f"{op.name} with dtype=bool runs as any/all in clreduce.api, not as a kernel")
        if want.kind in "iu":
            # numpy casts each element to the integer type and accumulates with wraparound.
            # Sums and products modulo 2**64 reduce to the same value modulo 2**8/16/32, so
            # the device accumulates in 64 bits and the host's cast to ``want`` wraps.
            acc = _wide_int(want, dtype)
            return DtypeRule(acc=acc, device_out=acc, out=want.name, host_divide=op.finalize == "mean")
        return DtypeRule(acc=_float_acc(want.name), device_out=want.name, out=want.name)
    if op.result == "bool":
        return DtypeRule(acc="uint32", device_out="bool", out="bool")
    if op.result == "intp":
        if op.kind == "arg":
            acc = _float_acc(name) if dtype.kind == "f" else (name if dtype.itemsize >= 4 else _narrow_acc(dtype))
            return DtypeRule(acc=acc, device_out="int64", out="int64")
        return DtypeRule(acc="int64", device_out="int64", out="int64")
    if dtype.kind == "f":
        # var/std summed in the input's own type: elements scaled by 2**-10 before the pilot's
        # difference, which then cannot overflow (reduce_state.cl SHIFT_SCALE)
        own = op.kind == "welford" and _float_acc(name) == name
        return DtypeRule(acc=_float_acc(name), device_out=name, out=name,
                         var_scale=("0x1p-10f" if name == "float32" else "0x1p-10") if own else None)
    # integers and bool
    if op.result == "wide":
        wide = "uint64" if dtype.kind == "u" else "int64"
        return DtypeRule(acc=wide, device_out=wide, out=wide)
    if op.result == "float":
        if op.finalize == "mean":
            wide = "uint64" if dtype.kind == "u" else "int64"
            return DtypeRule(acc=wide, device_out=wide, out="float64", host_divide=True)
        return DtypeRule(acc="float64", device_out="float64", out="float64")
    return DtypeRule(acc=name if dtype.itemsize >= 4 else _narrow_acc(dtype), device_out=name, out=name)


def _wide_int(want: np.dtype, source: np.dtype) -> str:
    # Float elements truncate toward zero as they convert (numpy's cast). A negative float
    # converted to an unsigned type is undefined in OpenCL C (the Intel CPU runtime turns
    # -3.5 into 3), so floats travel through int64: numpy's x86 casts go through a signed
    # conversion too (-3.5 -> 2**64 - 3).
    if want.kind == "u" and source.kind != "f":
        return "uint64"
    return "int64"


def _narrow_acc(dtype: np.dtype) -> str:
    # 8/16-bit values travel through a 32-bit accumulator: sub-group collectives on
    # char/short need cl_khr_subgroup_extended_types.
    return "uint32" if dtype.kind in "ub" else "int32"
