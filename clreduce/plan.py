"""The planner: a pure function from (DeviceCaps, Problem, Force) to a LaunchPlan.

Nothing here touches a device or imports a GPU library (a test enforces it), so every
decision can be checked on published device profiles without the hardware.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .caps import DeviceCaps
from .kernels import build_options
from .ops import CL_TYPE, OPS, dtype_rule

SG_MODES = ("local", "builtin", "shuffle_khr", "shuffle_qcom")
STRATEGIES = ("rows_per_sg", "sg_per_row", "wg_per_row", "split_k")
_SG_MODE_MACRO = {"local": 0, "builtin": 1, "shuffle_khr": 2, "shuffle_qcom": 3}
_REQD_MACRO = {"none": 0, "intel": 1, "qcom_half": 2, "qcom_full": 3}

# Split a row over several work-groups only when it is long enough to amortise the
# second pass: below this many elements per row a team of one group is fast enough.
SPLIT_MIN_ROW = 1 << 15
# Each split chunk keeps at least this many elements so partials stay few.
SPLIT_MIN_CHUNK = 1 << 13


class UnsupportedOnDevice(TypeError):
    """The request needs something the device does not have (fp64, sub-groups, ...)."""


@dataclass(frozen=True)
class Problem:
    """A reduction of the middle axis of a contiguous ``(rows, row_len)`` array."""

    rows: int
    row_len: int
    dtype: str
    op: str

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}; known: {sorted(OPS)}")
        if self.rows < 1 or self.row_len < 1:
            raise ValueError("Problem needs rows >= 1 and row_len >= 1 (empty cases are the API's)")


@dataclass(frozen=True)
class Force:
    """Plan overrides (argument ``force=`` or CLREDUCE_* variables); None = planner's choice.

    ``sg_mode`` "shuffle" means whichever shuffle the device has (KHR, else qcom).
    """

    sg_mode: str | None = None
    sg_size: int | None = None
    strategy: str | None = None
    wg_size: int | None = None
    vec: int | None = None

    def merged(self, other: Force) -> Force:
        """Fields of ``self``, falling back to ``other``'s where ``self`` has None."""
        return Force(**{f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                        else getattr(other, f.name) for f in dataclasses.fields(self)})


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel enqueue: what to build, how to launch, and its scalar arguments."""

    kernel_file: str
    entry: str
    defines: tuple[tuple[str, str], ...]
    options: tuple[str, ...]
    global_size: int
    local_size: int
    n_rows: int
    row_len: int
    row_stride: int
    chunk_len: int
    mean_count: int
    reads: str   # "input" or "partials"
    writes: str  # "output" or "partials"


@dataclass(frozen=True)
class LaunchPlan:
    """How a reduction runs on one device; ``passes`` run in order."""

    strategy: str
    sg_mode: str
    sg_size: int | None
    reqd_sg: str
    wg_size: int
    lanes: int
    vec: int
    split: int
    acc_dtype: str
    out_dtype: str
    device_out_dtype: str
    host_divide: bool
    local_mem_bytes: int
    passes: tuple[KernelLaunch, ...]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _choose_sg_mode(caps: DeviceCaps, forced: str | None) -> str:
    shuffle = "shuffle_khr" if caps.khr_shuffle else ("shuffle_qcom" if caps.qcom_shuffle else None)
    if forced is None:
        if caps.subgroup_reduce_builtins:
            return "builtin"
        return shuffle or "local"
    if forced == "local":
        return "local"
    if forced == "builtin":
        if not caps.subgroup_reduce_builtins:
            raise UnsupportedOnDevice(f"sg_mode='builtin' needs working sub-group reduce built-ins; {caps.name!r} has none")
        return "builtin"
    if forced in ("shuffle", "shuffle_khr", "shuffle_qcom"):
        wanted = shuffle if forced == "shuffle" else forced
        if wanted is None or wanted != shuffle:
            raise UnsupportedOnDevice(f"sg_mode={forced!r} needs a sub-group shuffle extension {caps.name!r} does not list")
        return wanted
    raise ValueError(f"unknown sg_mode {forced!r}; known: local, builtin, shuffle, shuffle_khr, shuffle_qcom")


def _choose_sg_size(caps: DeviceCaps, forced: int | None) -> tuple[int, str]:
    """Sub-group width and how it is requested ("intel", "qcom_half", "qcom_full", "none")."""
    sizes = caps.subgroup_sizes
    if not sizes:
        raise UnsupportedOnDevice(f"{caps.name!r}: sub-groups present but no known width")
    control = caps.subgroup_size_control
    if forced is not None and forced not in sizes:
        raise UnsupportedOnDevice(f"sg_size={forced} is not one of {caps.name!r}'s widths {list(sizes)}")
    if control == "intel":
        # Intel's CPU runtime maps a sub-group onto SIMD lanes and each work-item already
        # loads a 64-byte vector, so narrow sub-groups keep registers free (measured: 4 is
        # best on the bench shapes). Intel GPUs prefer 16.
        preferred = 4 if caps.device_type == "cpu" else 16
        size = forced or (preferred if preferred in sizes else max(sizes))
        return size, "intel"
    if control == "qcom":
        # Adreno 6xx/7xx run wave 64 ("half") or 128 ("full"); half keeps more waves resident.
        size = forced or min(sizes)
        return size, "qcom_full" if size == max(sizes) and len(sizes) > 1 else "qcom_half"
    if forced is not None and forced != sizes[0]:
        raise UnsupportedOnDevice(f"{caps.name!r} cannot request a sub-group width; it runs at {sizes[0]}")
    return sizes[0], "none"


def _default_wg_size(caps: DeviceCaps) -> int:
    if caps.vendor == "arm":
        return 128   # Arm's guides: 64 baseline, up to 128-256; local memory is system RAM
    return 256


def _default_vec(caps: DeviceCaps, itemsize: int) -> int:
    if caps.device_type == "cpu":
        # A whole cache line per load: measured on the Intel CPU runtime and PoCL, 64-byte
        # per-item vectors beat 16-byte ones 1.5-3x (each work-item's vector maps onto SIMD).
        return max(1, min(16, 64 // itemsize))
    return max(1, min(16, 16 // itemsize))  # 16-byte loads: one transaction per lane on GPUs


def plan(caps: DeviceCaps, problem: Problem, force: Force | None = None) -> LaunchPlan:
    """Choose strategy, sub-group mode/width, work-group size and vector width.

    Parameters
    ----------
    caps : DeviceCaps
    problem : Problem
    force : Force, optional
        Overrides, validated against ``caps``: asking for something the device cannot do
        raises ``UnsupportedOnDevice`` rather than silently running something else.

    Returns
    -------
    LaunchPlan
    """
    force = force or Force()
    op = OPS[problem.op]
    rule = dtype_rule(op, np.dtype(problem.dtype))
    needs_fp64 = "float64" in (problem.dtype, rule.acc, rule.device_out)
    if needs_fp64 and not caps.fp64:
        raise UnsupportedOnDevice(
            f"{problem.dtype} {problem.op} needs fp64, which device {caps.name!r} lacks; "
            "convert the input with .astype(numpy.float32) or pick a device with cl_khr_fp64"
        )
    if force.strategy is not None and force.strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {force.strategy!r}; known: {', '.join(STRATEGIES)}")

    sg_mode = _choose_sg_mode(caps, force.sg_mode)
    if sg_mode == "local":
        sg_size, reqd = None, "none"
    else:
        sg_size, reqd = _choose_sg_size(caps, force.sg_size)
    width = sg_size or caps.warp_size or 32  # local mode: a nominal width for strategy names

    wg_cap = _pow2_floor(caps.max_work_group_size)
    wg = force.wg_size or min(_default_wg_size(caps), wg_cap)
    if wg & (wg - 1) or wg > caps.max_work_group_size or (sg_size and wg % sg_size):
        raise ValueError(f"wg_size={wg} must be a power of two <= {caps.max_work_group_size}"
                         + (f" and a multiple of sg_size {sg_size}" if sg_size else ""))
    if sg_size and wg < sg_size:
        wg = sg_size

    itemsize = np.dtype(problem.dtype).itemsize
    vec = force.vec or _default_vec(caps, itemsize)
    if vec not in (1, 2, 4, 8, 16):
        raise ValueError(f"vec={vec} must be 1, 2, 4, 8 or 16")
    if force.vec is None:
        vec = min(vec, _pow2_floor(problem.row_len))

    cpu = caps.device_type == "cpu"
    # On CPUs a work-group runs on one core: a team stays within one sub-group (measured on
    # the Intel runtime), and without sub-groups (PoCL) one work-item owns a row or chunk:
    # PoCL's local-memory tree made long rows 2-4x slower than lanes=1. GPUs spread a long
    # row over the whole group.
    lanes_cap = min(wg, (sg_size or 1) if cpu else wg)

    def natural_lanes(length: int) -> int:
        # about four vector loads per lane before the team reduce
        return max(1, min(lanes_cap, _pow2_floor(_ceil_div(length, vec * 4))))

    strategy = force.strategy
    lanes = natural_lanes(problem.row_len)
    split = 1
    if strategy in (None, "split_k") and problem.row_len >= (SPLIT_MIN_ROW if strategy is None else 2):
        # Few long rows cannot fill the device one team per row: cut rows into chunks.
        want_tasks = (wg // lanes) * max(1, caps.compute_units) * 4
        split = min(_ceil_div(want_tasks, problem.rows), _ceil_div(problem.row_len, SPLIT_MIN_CHUNK))
        if strategy == "split_k":
            split = max(2, min(split, problem.row_len))
        if split >= 2:
            strategy = "split_k"
            lanes = natural_lanes(_ceil_div(problem.row_len, split))
        else:
            split = 1
    if strategy is None:
        strategy = "rows_per_sg" if lanes < width else ("sg_per_row" if lanes == width else "wg_per_row")
    elif strategy == "rows_per_sg":
        lanes = max(1, min(width // 2, lanes))
    elif strategy == "sg_per_row":
        lanes = min(width, wg)
    elif strategy == "wg_per_row":
        lanes = wg
    if sg_mode == "builtin" and 1 < lanes < (sg_size or 0):
        # Narrow teams need a butterfly; without a shuffle the built-in covers whole sub-groups.
        shuffle = "shuffle_khr" if caps.khr_shuffle else ("shuffle_qcom" if caps.qcom_shuffle else None)
        if shuffle:
            sg_mode = shuffle
        else:
            lanes = sg_size if strategy != "rows_per_sg" else 1

    acc_bytes = np.dtype(rule.acc).itemsize
    scratch = (wg if sg_mode == "local" else wg // sg_size) * acc_bytes if lanes > 1 else 0
    if scratch > caps.local_mem_size:
        raise UnsupportedOnDevice(f"{scratch} B of local memory exceeds {caps.name!r}'s {caps.local_mem_size} B")

    common = dict(caps=caps, op=op, sg_mode=sg_mode, sg_size=sg_size, reqd=reqd, wg=wg)
    if split == 1:
        passes = (_launch(**common, rows=problem.rows, row_len=problem.row_len, lanes=lanes, vec=vec,
                          in_dtype=problem.dtype, acc=rule.acc, out=rule.device_out, split=1,
                          finalize=op.mean and not rule.host_divide, reads="input", writes="output"),)
    else:
        chunk = _ceil_div(_ceil_div(problem.row_len, split), vec) * vec
        split = _ceil_div(problem.row_len, chunk)
        first = _launch(**common, rows=problem.rows, row_len=problem.row_len, lanes=lanes, vec=vec,
                        in_dtype=problem.dtype, acc=rule.acc, out=rule.acc, split=split, chunk=chunk,
                        finalize=False, reads="input", writes="partials")
        lanes2 = min(wg, _pow2_floor(split))
        if sg_mode == "builtin" and lanes2 < sg_size:
            lanes2 = sg_size if sg_size <= wg else 1
        second = _launch(**common, rows=problem.rows, row_len=split, lanes=lanes2, vec=1,
                         in_dtype=rule.acc, acc=rule.acc, out=rule.device_out, split=1,
                         finalize=op.mean and not rule.host_divide, mean_count=problem.row_len,
                         reads="partials", writes="output")
        passes = (first, second)

    return LaunchPlan(strategy=strategy, sg_mode=sg_mode, sg_size=sg_size, reqd_sg=reqd, wg_size=wg,
                      lanes=lanes, vec=vec, split=split, acc_dtype=rule.acc, out_dtype=rule.out,
                      device_out_dtype=rule.device_out, host_divide=rule.host_divide,
                      local_mem_bytes=scratch, passes=passes)


def _identity(combine: str, acc: str) -> str:
    if combine == "sum":
        return "0"
    if acc.startswith("float"):
        return "(-INFINITY)" if combine == "max" else "INFINITY"
    limits = {"int32": ("INT_MIN", "INT_MAX"), "uint32": ("0", "UINT_MAX"),
              "int64": ("LONG_MIN", "LONG_MAX"), "uint64": ("0", "ULONG_MAX")}
    low, high = limits[acc]
    return low if combine == "max" else high


def _launch(*, caps, op, sg_mode, sg_size, reqd, wg, rows, row_len, lanes, vec, in_dtype, acc, out,
            split, finalize, reads, writes, chunk=None, mean_count=None) -> KernelLaunch:
    teams = wg // lanes
    tasks = rows * split
    groups_needed = _ceil_div(tasks, teams)
    # Enough groups to fill every compute unit many times over; the rest is grid-stride.
    max_groups = max(1, caps.compute_units) * (64 if caps.device_type == "gpu" else 32)
    groups = max(1, min(groups_needed, max_groups))
    defines = {
        f"OP_{op.combine.upper()}": 1,
        "IN_T": CL_TYPE[in_dtype],
        "ACC_T": CL_TYPE[acc],
        "OUT_T": CL_TYPE[out],
        "ACC_IS_FLOAT": int(acc.startswith("float")),
        "ACC_BYTES": np.dtype(acc).itemsize,
        "IDENTITY": _identity(op.combine, acc),
        "WG_SIZE": wg,
        "LANES": lanes,
        "VEC": vec,
        "SPLIT": split,
        "SG_MODE": _SG_MODE_MACRO[sg_mode],
        "SG_SIZE": sg_size or 0,
        "REQD_SG": _REQD_MACRO[reqd],
        "FINALIZE_MEAN": int(finalize),
        "IN_HALF": int(in_dtype == "float16"),
        "OUT_HALF": int(out == "float16"),
    }
    cl_std = caps.cl_std if sg_mode != "local" else None
    pairs = tuple(sorted((k, str(v)) for k, v in defines.items()))
    return KernelLaunch(kernel_file="reduce_rows.cl", entry="reduce_rows", defines=pairs,
                        options=build_options(pairs, cl_std), global_size=groups * wg, local_size=wg,
                        n_rows=rows, row_len=row_len, row_stride=row_len,
                        chunk_len=chunk if chunk is not None else row_len,
                        mean_count=mean_count if mean_count is not None else row_len,
                        reads=reads, writes=writes)
