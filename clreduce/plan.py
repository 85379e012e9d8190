"""The planner: a pure function from (DeviceCaps, Problem, Force) to a LaunchPlan.

Nothing here touches a device or imports a GPU library (a test enforces it), so every
decision can be checked on published device profiles without the hardware.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .caps import DeviceCaps
from .kernels import build_options
from .ops import CL_TYPE, OPS, WIDE_SUM, DtypeRule, dtype_rule, sum_may_wrap
from .plan_nvidia import nvidia_gpu, row_team, split_count
from .plan_nvidia import SPLIT_UNROLL as _NV_SPLIT_UNROLL

SG_MODES = ("local", "builtin", "shuffle_khr", "shuffle_qcom", "shuffle_ptx")
STRATEGIES = ("rows_per_sg", "sg_per_row", "wg_per_row", "split_k")  # team kernels (sub-groups or local)
# One work-item per contiguous block of rows, explicit vectors: the default on CPU runtimes
# that vectorise across work-items (cpu_blocks_default); runs anywhere when forced.
CPU_STRATEGY = "cpu_blocks"
ALL_STRATEGIES = STRATEGIES + (CPU_STRATEGY,)
_SG_MODE_MACRO = {"local": 0, "builtin": 1, "shuffle_khr": 2, "shuffle_qcom": 3, "shuffle_ptx": 4}
_REQD_MACRO = {"none": 0, "intel": 1, "qcom_half": 2, "qcom_full": 3}

# Split a row over several work-groups only when it is long enough to amortise the
# second pass: below this many elements per row a team of one group is fast enough.
SPLIT_MIN_ROW = 1 << 15
# Each split chunk keeps at least this many elements so partials stay few.
SPLIT_MIN_CHUNK = 1 << 13

# cpu_blocks: work-items per compute unit. A CPU runtime hands work-groups to its worker
# threads dynamically, so a few per core balance a machine whose cores are also busy with
# other work, while each still streams a long contiguous block. A choice, not a tuned value:
# on the loaded 2-core EPYC of this work 2, 8 and 16 were within the noise of each other.
CPU_ITEMS_PER_CU = 8
# cpu_blocks: independent vector accumulators per work-item (the add latency is 3-4 cycles;
# four chains keep the loads, not the adds, the limit).
CPU_UNROLL = 4
# ... and eight for float sums, each taking CPU_ACC_BLOCK loads a block (the same span as four
# of ACC_BLOCK, so no more compensated joins): a block's plain adds err with their chain's
# length, and four chains of 32 left N(0, 100) float32 rows of 1000-2000 at 1.10-1.26x numpy's
# mean error (4000 rows each, Intel's runtime and PoCL alike); eight chains of 16, with the
# tails summed apart (reduce_rows.cl, cpu_block), at 0.85-1.03x on rows of 300-20011.
CPU_SUM_UNROLL = 8
CPU_ACC_BLOCK = 16
# Tasks shorter than this many vector loads keep four accumulators (their chains are then at
# most 16 long anyway; eight would leave short rows' loads to the tail loop and fold seven
# empty accumulators per row).
CPU_SUM_UNROLL_MIN_LOADS = 64
# cpu_blocks argmax/argmin count vector steps in 32-bit lanes (float32/int32 input): tasks of
# at most this many elements keep every step count far below 2**31.
CPU_ARG_CHUNK = 1 << 28
# op kinds with a cpu_blocks kernel (reduce_rows_cpu; reduce_rows_state_cpu)
_CPU_KINDS = ("scalar", "arg", "welford", "wide")


class UnsupportedOnDevice(TypeError):
    """The request needs something the device does not have (fp64, sub-groups, ...)."""


@dataclass(frozen=True)
class Problem:
    """Reduce the middle axis of a C-contiguous ``(rows, row_len, inner)`` array.

    ``inner == 1`` is the contiguous row case; ``inner > 1`` the strided (column) case.
    ``acc_dtype`` is the user's ``dtype=`` (None: numpy's rule); ``param`` is ``ddof``.
    """

    rows: int
    row_len: int
    dtype: str
    op: str
    inner: int = 1
    acc_dtype: str | None = None
    param: float = 0.0

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}; known: {sorted(OPS)}")
        if self.rows < 1 or self.row_len < 1 or self.inner < 1:
            raise ValueError("Problem needs rows, row_len and inner >= 1 (empty cases are the API's)")


@dataclass(frozen=True)
class Force:
    """Plan overrides (argument ``force=`` or CLREDUCE_* variables); None = planner's choice.

    ``sg_mode`` "shuffle" means whichever shuffle the device has (KHR, else qcom, else
    NVIDIA's inline PTX). The launch-shape knobs of row plans, which ``clreduce tune``
    searches: ``lanes`` (work-items per row, a power of two), ``unroll`` (vector loads in
    flight per work-item, 1-8, the kernels' ``UNROLL``) and ``split`` (chunks per row; 1 = no
    split, >= 2 = split_k with that many; for a non-last axis, chunks of K per column).
    """

    sg_mode: str | None = None
    sg_size: int | None = None
    strategy: str | None = None
    wg_size: int | None = None
    vec: int | None = None
    lanes: int | None = None
    unroll: int | None = None
    split: int | None = None

    def __post_init__(self):
        # Checked when built, so a typo such as sg_size=0 fails instead of meaning "planner's".
        for name in ("sg_size", "wg_size", "vec", "lanes", "unroll", "split"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"Force.{name} must be an int or None, not {type(value).__name__}")
            if value < 1 or (name not in ("unroll", "split") and value & (value - 1)):
                raise ValueError(f"Force.{name}={value} must be a positive power of two")
        if self.vec is not None and self.vec > 16:
            raise ValueError(f"Force.vec={self.vec} must be 1, 2, 4, 8 or 16")
        if self.unroll is not None and self.unroll > 8:
            raise ValueError(f"Force.unroll={self.unroll} must be 1..8")
        for name, known in (("sg_mode", SG_MODES + ("shuffle",)), ("strategy", ALL_STRATEGIES)):
            value = getattr(self, name)
            if value is not None and value not in known:
                raise ValueError(f"unknown {name} {value!r}; known: {', '.join(known)}")

    def merged(self, other: Force) -> Force:
        """Fields of ``self``, falling back to ``other``'s where ``self`` has None."""
        return Force(**{f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                        else getattr(other, f.name) for f in dataclasses.fields(self)})


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel enqueue: what to build, how to launch, and its scalar arguments.

    Kernel arguments are ``(in, in_offset, out, out_offset, *scalars)``; each scalar is
    ``(name, kind, value)`` with kind "u64" or "acc" (the accumulator's float type).
    """

    kernel_file: str
    entry: str
    defines: tuple[tuple[str, str], ...]
    options: tuple[str, ...]
    global_size: int
    local_size: int
    scalars: tuple[tuple[str, str, float], ...]
    acc_dtype: str
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
    partials_bytes: int
    passes: tuple[KernelLaunch, ...]
    # device_out_dtype values per result: 2 for an exact integer sum in two 64-bit words
    # (an integer mean that could wrap; clreduce.ops.wide_sums_to_float64 reads them)
    out_words: int = 1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# Bytes reserved per partial state in split passes: the largest struct in reduce_state.cl
# is {double, double, ulong} = 24 B; 32 keeps every layout's alignment.
STATE_BYTES = 32


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _shuffle_mode(caps: DeviceCaps) -> str | None:
    """The butterfly the device can run: KHR shuffle, else qcom's (Adreno has no KHR one),
    else NVIDIA OpenCL's inline PTX (no sub-group extension there)."""
    if caps.khr_shuffle:
        return "shuffle_khr"
    if caps.qcom_shuffle:
        return "shuffle_qcom"
    return "shuffle_ptx" if caps.ptx_shuffle and caps.subgroup_sizes else None


def _choose_sg_mode(caps: DeviceCaps, forced: str | None) -> str:
    shuffle = _shuffle_mode(caps)
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
    if forced in ("shuffle", "shuffle_khr", "shuffle_qcom", "shuffle_ptx"):
        wanted = shuffle if forced == "shuffle" else forced
        if wanted is None or wanted != shuffle:
            raise UnsupportedOnDevice(f"sg_mode={forced!r} needs a sub-group shuffle extension {caps.name!r} does not list")
        return wanted
    raise ValueError(f"unknown sg_mode {forced!r}; known: local, builtin, shuffle, shuffle_khr, shuffle_qcom, "
                     "shuffle_ptx")


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
        raises ``UnsupportedOnDevice`` rather than silently running something else. Row
        strategies do not apply to the strided case, where only "split_k" is honoured.

    Returns
    -------
    LaunchPlan
    """
    force = force or Force()
    op = OPS[problem.op]
    rule = dtype_rule(op, np.dtype(problem.dtype), problem.acc_dtype)
    if (op.kind == "welford" and not caps.fp64 and problem.acc_dtype is None
            and np.dtype(problem.dtype).kind in "iub" and rule.acc == "float64"):
        # Integer var/std without fp64 (Mali, Adreno under Mesa, rusticl): each element minus
        # its row's pilot is exact in 64-bit integers, rounded once to float32, then the
        # compensated Welford of reduce_state.cl (64-bit differences scaled by 2**-32 so their
        # squares fit); the host casts to numpy's float64 (README, Tolerances)
        wide = np.dtype(problem.dtype).itemsize == 8
        rule = DtypeRule(acc="float32", device_out="float32", out=rule.out, var_scale="0x1p-32f" if wide else None)
    if op.finalize == "mean" and rule.host_divide and problem.acc_dtype is None \
            and sum_may_wrap(problem.dtype, problem.row_len):
        # numpy's integer mean sums in float64 and never wraps: an exact sum in two 64-bit
        # words instead of one (issue 8 item 1), divided on the host like the 64-bit one
        op = WIDE_SUM
        rule = DtypeRule(acc=rule.acc, device_out="uint64", out=rule.out, host_divide=True)
    if "float64" in (problem.dtype, rule.acc, rule.device_out) and not caps.fp64:
        raise UnsupportedOnDevice(
            f"{problem.dtype} {problem.op} needs fp64, which device {caps.name!r} lacks; "
            "convert the input with .astype(numpy.float32) (or pass dtype=numpy.float32) "
            "or pick a device with cl_khr_fp64"
        )
    if force.strategy is not None and force.strategy not in ALL_STRATEGIES:
        raise ValueError(f"unknown strategy {force.strategy!r}; known: {', '.join(ALL_STRATEGIES)}")
    if force.vec is not None and force.vec not in (1, 2, 4, 8, 16):
        raise ValueError(f"vec={force.vec} must be 1, 2, 4, 8 or 16")
    plan_kind = _plan_columns if problem.inner > 1 else _plan_rows
    planned = plan_kind(caps, problem, force, op, rule)
    widest = _vec_within_limit(caps, problem, rule, op)
    if widest is not None and planned.vec > widest:
        if force.vec is not None:
            raise UnsupportedOnDevice(f"vec={force.vec} of {problem.dtype} (accumulated as {rule.acc}) needs vectors "
                                      f"wider than the {caps.vector_bytes_limit} bytes {caps.name!r} compiles "
                                      f"correctly (DeviceCaps.vector_bytes_limit); use vec <= {widest}")
        planned = plan_kind(caps, problem, dataclasses.replace(force, vec=widest), op, rule)
    if problem.inner > 1:
        return planned
    if _pocl_half_vec8_crashes(caps, problem, op, planned.vec):
        if force.vec is not None:
            raise UnsupportedOnDevice(f"vec=8 for {op.name} of float16 rows crashes {caps.name!r} (PoCL's "
                                      "compiled kernel segfaults); use vec 4 or 16")
        planned = _plan_rows(caps, problem, dataclasses.replace(force, vec=4), op, rule)
    return planned


def _vec_within_limit(caps: DeviceCaps, problem: Problem, rule, op) -> int | None:
    """The largest vec whose input, accumulator and intermediate vectors stay within the
    device's ``vector_bytes_limit`` (None: no limit). var/std of integers take their exact
    differences from the pilot in 64 bits (reduce_state.cl SHIFT_MODE 1-3) whatever the
    accumulator: int32 data with dtype=float32 made long8 vectors, and pip's PoCL aborted
    in LLVM ("Cannot select: v8f32 = X86ISD::FILD", an outside fuzz run, 2026-11-27)."""
    limit = caps.vector_bytes_limit
    if limit is None:
        return None
    width = max(np.dtype(problem.dtype).itemsize, np.dtype(rule.acc).itemsize)
    if op.kind == "welford" and np.dtype(problem.dtype).kind in "iub":
        width = max(width, 8)
    return _pow2_floor(max(1, limit // width))


def _pocl_half_vec8_crashes(caps: DeviceCaps, problem: Problem, op, vec: int) -> bool:
    """PoCL segfaulted running float16 rows with 8-wide vectors in the ops that test or select
    per element: any / all / count_nonzero (pip's PoCL 3.1, pthread-haswell), and argmax,
    argmin, nansum, nanmax, nanmin and nanmean's count of non-NaNs (Debian's PoCL 3.1, rows of
    9-15, where the planner itself picks vec 8; sum, max and vec 4 or 16 ran). Both found by
    outside fuzz runs. Refused forced, replanned with vec 4 otherwise."""
    selects = (op.map in ("nonzero", "nan_to_zero", "notnan") or op.combine in ("nanmax", "nanmin") or op.kind == "arg")
    return caps.implementation == "pocl" and problem.dtype == "float16" and selects and vec == 8


# Mesa's llvmpipe (rusticl on the CPU) ends every loop of a kernel after 65535 trips
# without an error (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS): a forced
# sequential sum of 2**20 ones gave 65535. Plans there keep each work-item's loops shorter
# (split chunks) or raise UnsupportedOnDevice.
RUSTICL_LOOP_TRIPS = 65535


def _loop_limit(caps: DeviceCaps) -> int | None:
    return RUSTICL_LOOP_TRIPS if caps.implementation == "rusticl" else None


def llvmpipe_loop_limited(caps: DeviceCaps) -> bool:
    """True for the device whose compiler cuts loops at RUSTICL_LOOP_TRIPS trips (llvmpipe,
    the CPU device behind rusticl; plan_rowops.LLVMPIPE_LOOP_LIMIT is the same count)."""
    return caps.implementation == "rusticl" and caps.device_type == "cpu"


# reduce_rows.cl's reduce_cols (scalar ops) counts several limiter trips per step of K, more
# with more column blocks (NBLK) and wider vectors (VEC) per work-item: forced plans that
# walked a whole column gave wrong sums from K ~ 16200 (NBLK 1-2, VEC 1-16), 3700 (NBLK 16),
# 1130 (NBLK 64 and 300), 1990 (NBLK 19, VEC 16), 2700-4000 (NBLK 4, VEC 16), and so did
# default plans that did not split (a (300, 40000, 2) sum over axis 1 gave 32328). llvmpipe
# plans cap NBLK and bound a chunk by this count, a margin of ~1.5-3 over those.
RUSTICL_COL_NBLK = 4


def _rusticl_col_trips(op, nblk: int, vec: int) -> int:
    """Loop-limiter trips per step of K of a column work-item on llvmpipe (an upper bound,
    measured for scalar ops; the state kernels ran columns of 70000 correctly)."""
    return 4 + nblk * (2 + vec) if op.kind == "scalar" else 1


def _choose_wg(caps: DeviceCaps, force: Force, sg_size: int | None) -> int:
    wg_cap = _pow2_floor(caps.max_work_group_size)
    wg = force.wg_size or min(_default_wg_size(caps), wg_cap)
    if force.wg_size is None and sg_size and wg < sg_size:
        wg = sg_size
    if wg & (wg - 1) or wg > caps.max_work_group_size or (sg_size and wg % sg_size):
        raise ValueError(f"wg_size={wg} must be a power of two <= {caps.max_work_group_size}"
                         + (f" and a multiple of sg_size {sg_size}" if sg_size else ""))
    return wg


def _plan_rows(caps: DeviceCaps, problem: Problem, force: Force, op, rule) -> LaunchPlan:
    if force.strategy == CPU_STRATEGY and caps.backend == "cuda":
        # reduce_rows_cpu spells OpenCL vector halves (.lo/.hi), which CUDA's float4 lacks;
        # the strategy exists for CPU runtimes' cross-work-item vectorisers, not warps
        raise UnsupportedOnDevice(f"strategy='{CPU_STRATEGY}' is an OpenCL CPU strategy; the CUDA backend "
                                  f"({caps.name!r}) has no kernel for it")
    if op.kind in _CPU_KINDS and (force.strategy == CPU_STRATEGY or (
            force.strategy is None and force.sg_mode is None and force.sg_size is None and cpu_blocks_default(caps))):
        return _plan_cpu_blocks(caps, problem, force, op, rule)
    if force.strategy == CPU_STRATEGY:
        force = dataclasses.replace(force, strategy=None)  # logsumexp: no CPU-block kernel
    sg_mode = _choose_sg_mode(caps, force.sg_mode)
    if force.sg_mode is None and not caps.subgroup_sizes:
        sg_mode = "local"  # sub-groups listed but no known width (a profile without one): cannot plan teams
    shuffle = _shuffle_mode(caps)
    if sg_mode == "builtin" and (op.kind != "scalar" or op.combine in ("prod", "nanmax", "nanmin")):
        # No built-in for prod or struct states, and built-in max/min leave NaN unspecified.
        sg_mode = shuffle or "local"
    if sg_mode == "local":
        sg_size, reqd = None, "none"
    else:
        sg_size, reqd = _choose_sg_size(caps, force.sg_size)
    width = sg_size or caps.warp_size or 32  # local mode: a nominal width for strategy names
    wg = _choose_wg(caps, force, sg_size)

    itemsize = np.dtype(problem.dtype).itemsize
    vec = force.vec or min(_default_vec(caps, itemsize), _pow2_floor(problem.row_len))
    cpu = caps.device_type == "cpu"
    # On CPUs a work-group runs on one core: a team stays within one sub-group (measured on
    # the Intel runtime), and without sub-groups (PoCL) one work-item owns a row or chunk:
    # PoCL's local-memory tree made long rows 2-4x slower than lanes=1. GPUs spread a long
    # row over the whole group.
    lanes_cap = min(wg, (sg_size or 1) if cpu else wg)

    def natural_lanes(length: int) -> int:
        # about four vector loads per lane before the team reduce
        return max(1, min(lanes_cap, _pow2_floor(_ceil_div(length, vec * 4))))

    strategy = force.strategy if force.strategy != "columns" else None
    if force.split is not None and force.split >= 2:
        if strategy not in (None, "split_k"):
            raise ValueError(f"split={force.split} needs strategy split_k, not {strategy!r}")
        strategy = "split_k"
    elif force.split == 1 and strategy == "split_k":
        raise ValueError("split=1 (no split) contradicts strategy='split_k'")
    lanes = natural_lanes(problem.row_len)
    split = 1
    limit = _loop_limit(caps)
    unroll = force.unroll
    # NVIDIA GPUs (CUDA or NVIDIA's OpenCL): measured team widths, unrolling and split counts
    # (plan_nvidia.py) where the caller left the launch shape to the planner.
    nvidia = (nvidia_gpu(caps) and force.strategy is None and force.wg_size is None and force.vec is None)
    if strategy in (None, "split_k") and force.split != 1 and \
            problem.row_len >= (SPLIT_MIN_ROW if strategy is None else 2):
        # Few long rows cannot fill the device one team per row: cut rows into chunks.
        want_tasks = (wg // lanes) * max(1, caps.compute_units) * 4
        split = min(_ceil_div(want_tasks, problem.rows), _ceil_div(problem.row_len, SPLIT_MIN_CHUNK))
        if limit:
            split = max(split, _ceil_div(problem.row_len, limit * vec))
        if strategy == "split_k":
            split = max(2, min(split, problem.row_len))
        if force.split is not None:
            split = min(force.split, problem.row_len)
        elif split >= 2 and nvidia:
            split = split_count(problem.rows, problem.row_len, itemsize, caps.compute_units)
        if split >= 2:
            strategy = "split_k"
            if nvidia and force.lanes is None:
                lanes, unroll = wg, unroll or _NV_SPLIT_UNROLL
            else:
                lanes = natural_lanes(_ceil_div(problem.row_len, split))
        else:
            split = 1
    if split == 1 and nvidia and force.lanes is None:
        lanes, nv_unroll = row_team(problem.row_len, itemsize, vec, wg, arg=op.kind == "arg")
        unroll = unroll or nv_unroll
    if force.lanes is not None:
        if force.lanes > wg:
            raise ValueError(f"lanes={force.lanes} exceeds the work-group size {wg}")
        if strategy not in (None, "split_k"):
            raise ValueError(f"lanes={force.lanes} cannot be combined with strategy {strategy!r}")
        lanes = force.lanes
    if strategy is None or strategy == "split_k":
        strategy = strategy or ("rows_per_sg" if lanes < width else ("sg_per_row" if lanes == width else "wg_per_row"))
    elif strategy == "rows_per_sg":
        lanes = max(1, min(width // 2, lanes))
    elif strategy == "sg_per_row":
        lanes = min(width, wg)
    elif strategy == "wg_per_row":
        lanes = wg
    if sg_mode == "builtin" and 1 < lanes < sg_size:
        # Narrow teams need a butterfly; without a shuffle the built-in covers whole
        # sub-groups: a GPU then gives each row a sub-group (coalesced; one lane per row
        # would read rows apart, e.g. Adreno 750's list has no qcom shuffle).
        if shuffle:
            sg_mode = shuffle
        elif cpu or force.strategy == "rows_per_sg":
            lanes = 1
        else:
            lanes = min(sg_size, wg)
            strategy = "sg_per_row" if strategy != "split_k" else strategy

    acc_bytes = np.dtype(rule.acc).itemsize if op.kind == "scalar" else STATE_BYTES
    if _compensated(op, rule):
        acc_bytes *= 2  # float sums merge (sum, correction) pairs
    scratch = (wg if sg_mode == "local" else wg // sg_size) * acc_bytes if lanes > 1 else 0
    if scratch > caps.local_mem_size:
        raise UnsupportedOnDevice(f"{scratch} B of local memory exceeds {caps.name!r}'s {caps.local_mem_size} B")

    family = _row_family(op)
    common = dict(caps=caps, op=op, rule=rule, sg_mode=sg_mode, sg_size=sg_size, reqd=reqd, wg=wg,
                  param=problem.param, count=problem.row_len)
    partials_bytes = 0
    if split == 1:
        passes = (family(**common, rows=problem.rows, row_len=problem.row_len, lanes=lanes, vec=vec,
                         in_dtype=problem.dtype, split=1, chunk=problem.row_len, first=True, last=True,
                         unroll=unroll),)
    else:
        chunk = _ceil_div(_ceil_div(problem.row_len, split), vec) * vec
        split = _ceil_div(problem.row_len, chunk)
        lanes2 = min(wg, _pow2_floor(split)) if not cpu else 1
        if sg_mode == "builtin" and 1 < lanes2 < sg_size:
            lanes2 = sg_size if sg_size <= wg else 1
        passes = (
            family(**common, rows=problem.rows, row_len=problem.row_len, lanes=lanes, vec=vec,
                   in_dtype=problem.dtype, split=split, chunk=chunk, first=True, last=False, unroll=unroll),
            family(**common, rows=problem.rows, row_len=split, lanes=lanes2, vec=1,
                   in_dtype=rule.acc, split=1, chunk=split, first=False, last=True),
        )
        partials_bytes = _partials_bytes(op, rule, problem.rows * split)
    if limit:
        trips = max(_ceil_div(min(problem.row_len, chunk if split > 1 else problem.row_len), lanes * vec),
                    _ceil_div(split, lanes2) if split > 1 else 0)
        if trips > limit:
            raise UnsupportedOnDevice(
                f"{caps.name!r} ({caps.implementation}) stops every kernel loop after {limit} trips; this plan "
                f"needs {trips} per work-item (strategy {strategy}, lanes {lanes}, vec {vec}, split {split}): "
                "leave the strategy to the planner or force split_k")

    return LaunchPlan(strategy=strategy, sg_mode=sg_mode, sg_size=sg_size, reqd_sg=reqd, wg_size=wg,
                      lanes=lanes, vec=vec, split=split, acc_dtype=rule.acc, out_dtype=rule.out,
                      device_out_dtype=rule.device_out, host_divide=rule.host_divide,
                      local_mem_bytes=scratch, partials_bytes=partials_bytes, passes=passes,
                      out_words=2 if op.kind == "wide" else 1)


def cpu_blocks_default(caps: DeviceCaps) -> bool:
    """Whether the planner gives contiguous rows to a CPU device's ``cpu_blocks`` kernel.

    Intel's CPU runtime and PoCL vectorise a work-group's loop across work-items, which turns
    the team kernels' per-lane vector loads into gathers (1-5 GB/s on a 2-core EPYC); one
    work-item per block with explicit vectors runs near memory speed there. Mesa's llvmpipe
    (rusticl) runs each work-item in one SIMD lane, so a one-item group would leave the rest
    idle: it keeps the team kernels, as GPUs do.
    """
    return caps.device_type == "cpu" and caps.implementation in ("intel", "pocl")


def _cpu_vec(itemsize: int) -> int:
    # one 32-byte AVX register of input per accumulator: four accumulators then use 4 of the
    # 16 ymm registers (64-byte vectors were no faster in a noisy A/B, and use twice as many)
    return max(1, min(16, 32 // itemsize))


def _plan_cpu_blocks(caps: DeviceCaps, problem: Problem, force: Force, op, rule) -> LaunchPlan:
    """Contiguous rows: each work-item reduces a block of whole rows, or of split chunks."""
    if force.sg_mode not in (None, "local") or force.sg_size is not None:
        raise ValueError("strategy 'cpu_blocks' uses no sub-groups: leave sg_mode/sg_size unset or 'local'")
    wg = force.wg_size or 1
    if wg > caps.max_work_group_size:
        raise ValueError(f"wg_size={wg} must be a power of two <= {caps.max_work_group_size}")
    itemsize = np.dtype(problem.dtype).itemsize
    vec = force.vec or min(_cpu_vec(itemsize), _pow2_floor(problem.row_len))
    if op.kind == "welford" and itemsize == 8 and np.dtype(problem.dtype).kind in "iu":
        # var/std of 64-bit integers: the exact shift (reduce_state.cl, TO_ACC) is scalar code
        if force.vec not in (None, 1):
            raise UnsupportedOnDevice(f"strategy 'cpu_blocks' runs {problem.op} of {problem.dtype} with vec=1 only")
        vec = 1
    items = max(1, caps.compute_units) * CPU_ITEMS_PER_CU
    split = 1
    if problem.rows < items and problem.row_len >= 2 * SPLIT_MIN_CHUNK:
        split = min(_ceil_div(items, problem.rows), _ceil_div(problem.row_len, SPLIT_MIN_CHUNK))
    if op.kind == "arg":
        split = max(split, _ceil_div(problem.row_len, CPU_ARG_CHUNK))
    family = _row_family(op)
    common = dict(caps=caps, op=op, rule=rule, sg_mode="local", sg_size=None, reqd="none", wg=wg,
                  param=problem.param, count=problem.row_len, cpu_items=items)
    partials_bytes = 0
    if split == 1:
        passes = (family(**common, rows=problem.rows, row_len=problem.row_len, lanes=1, vec=vec,
                         in_dtype=problem.dtype, split=1, chunk=problem.row_len, first=True, last=True),)
    else:
        chunk = _ceil_div(_ceil_div(problem.row_len, split), vec) * vec
        split = _ceil_div(problem.row_len, chunk)
        scalar = op.kind == "scalar"
        # a pass over partial states reads one state at a time
        vec2 = min(_cpu_vec(np.dtype(rule.acc).itemsize), _pow2_floor(split)) if scalar else 1
        passes = (
            family(**common, rows=problem.rows, row_len=problem.row_len, lanes=1, vec=vec,
                   in_dtype=problem.dtype, split=split, chunk=chunk, first=True, last=False),
            family(**common, rows=problem.rows, row_len=split, lanes=1, vec=vec2,
                   in_dtype=rule.acc, split=1, chunk=split, first=False, last=True),
        )
        partials_bytes = _partials_bytes(op, rule, problem.rows * split)
    return LaunchPlan(strategy="cpu_blocks", sg_mode="local", sg_size=None, reqd_sg="none", wg_size=wg,
                      lanes=1, vec=vec, split=split, acc_dtype=rule.acc, out_dtype=rule.out,
                      device_out_dtype=rule.device_out, host_divide=rule.host_divide,
                      local_mem_bytes=0, partials_bytes=partials_bytes, passes=passes,
                      out_words=2 if op.kind == "wide" else 1)


# GPUs, split columns: each work-item of the first pass walks its chunk of K one row after
# another, and the merge pass walks a column's `split` partials one after another, so the two
# walks (K / split and split steps) balance at split ~ sqrt(K); chunks of at least
# GPU_COL_MIN_CHUNK rows. H200, column sums/max/var/argmax of float32 and float16, every
# split from 1 to 16384 on six shapes (benchmarks/columns_split_h200_2026-11-29/): the best
# split was 1024 for 1048576 x 32, 512 for 262144 x 128, 128-256 for 65536 x 1024, 64-128 for
# 16384 x 4096, 16-32 for 4096 x 16384, 8-16 for 1024 x 65536; the rule before (enough
# work-items for 8 per thread slot, chunks of 64 rows) took 16384, 4096, 1024, 256, 64, 16:
# up to 10x slower (float32 sum of 1048576 x 32: 32 -> 321 GB/s).
# Terms that cost more than a load to fold (products, with their range checks; max/min of
# 1-2-byte types, converted first) want more work-items in the first pass: 4x the chunks. The
# same H200 run: float16 max best at 4096, 1024-2048, 512, 256, 64, 16 chunks on those shapes;
# float32 prod of 65536 x 1024, 16384 x 4096, 4096 x 16384 at sqrt(K) chunks lost a third
# against the rule before (1091 -> 711, 2088 -> 1367, 2648 -> 1498 GB/s).
GPU_COL_HEAVY_FACTOR = 4
GPU_COL_MIN_CHUNK = 128


def _heavy_column_terms(op, itemsize: int) -> bool:
    return op.combine == "prod" or (op.kind == "scalar" and op.combine in ("max", "min", "nanmax", "nanmin")
                                    and itemsize <= 2)


def gpu_column_split(k: int, heavy: bool = False) -> int:
    """Chunks of K per column on a GPU: sqrt(K) rounded down to a power of two (times
    GPU_COL_HEAVY_FACTOR for heavy terms), chunks of at least GPU_COL_MIN_CHUNK rows (of a
    quarter of that for heavy terms); 1: no split."""
    factor = GPU_COL_HEAVY_FACTOR if heavy else 1
    return max(1, min(factor * _pow2_floor(max(1, math.isqrt(k))), k * factor // GPU_COL_MIN_CHUNK))


def _plan_columns(caps: DeviceCaps, problem: Problem, force: Force, op, rule) -> LaunchPlan:
    """Strided axis: work-items along ``inner`` (VEC adjacent columns each) walk K."""
    wg = _choose_wg(caps, Force(wg_size=force.wg_size), None)
    if caps.device_type == "cpu" and force.wg_size is None:
        wg = min(wg, 16)  # a CPU work-group is one core's task: keep many of them
    itemsize = np.dtype(problem.dtype).itemsize
    vec = force.vec or min(_default_vec(caps, itemsize), _pow2_floor(problem.inner))
    if problem.dtype == "float16" and op.kind != "scalar":
        vec = 1  # reduce_state.cl reads half one element at a time (vload_half)
    if op.kind != "scalar" and caps.implementation == "rusticl":
        # Mesa rusticl 22.3.6 on llvmpipe: the first launch after a kernel is compiled loses
        # the identity stores into a private state_t[VEC] array (VEC > 1) in the first 8
        # work-items each worker thread runs; they start from zeros, so argmax of all-negative
        # columns gave index 0 (README, Supported devices; tests/test_caps.py reproduces it).
        if vec != 1 and force.vec is not None:
            raise UnsupportedOnDevice(f"vec={vec} for {op.name} along a strided axis is miscompiled by "
                                      f"rusticl ({caps.name!r}): only vec=1 runs correctly there")
        vec = 1
    # CPUs: one work-item streams a whole span of up to 4 KB of columns (see reduce_cols)
    nblk = 1
    if caps.device_type == "cpu" and op.kind == "scalar":
        # accumulators, not inputs, fill the private array: 4 KB per work-item, and at most
        # 64 KB per work-group (PoCL keeps a group's private arrays on one thread's stack and
        # crashed with 32 KB x 1024 work-items of int64 accumulators)
        acc_vec_bytes = vec * np.dtype(rule.acc).itemsize
        nblk = max(1, min(_ceil_div(problem.inner, vec), 4096 // acc_vec_bytes, (64 << 10) // (wg * acc_vec_bytes)))
    limit = _loop_limit(caps)
    if limit and op.kind == "scalar":
        nblk = min(nblk, RUSTICL_COL_NBLK)
    items = problem.rows * _ceil_div(problem.inner, vec * nblk)
    want_items = max(1, caps.compute_units) * wg * (8 if caps.device_type == "gpu" else 4)
    split = 1
    if force.split == 1 and force.strategy == "split_k":
        raise ValueError("split=1 (no split) contradicts strategy='split_k'")
    if force.split is not None:
        split = min(force.split, problem.row_len)  # chunks of K per column (1: none)
    elif force.strategy == "split_k" or (force.strategy is None and items < want_items and problem.row_len >= 512):
        split = max(2 if force.strategy == "split_k" else 1,
                    min(_ceil_div(want_items, items), _ceil_div(problem.row_len, 64)))
        if caps.device_type == "gpu" and force.strategy is None:
            split = min(split, gpu_column_split(problem.row_len, _heavy_column_terms(op, itemsize)))
        split = min(split, problem.row_len)
    if limit:
        # each work-item walks one chunk (VEC columns a block), and the merge pass walks
        # `split` partials (VEC 1); very long columns read one column a block
        merge_steps = limit // _rusticl_col_trips(op, nblk, 1)
        steps = limit // _rusticl_col_trips(op, nblk, vec)
        if vec > 1 and force.vec is None and _ceil_div(problem.row_len, steps) > merge_steps:
            vec, steps = 1, merge_steps
        split = max(split, _ceil_div(problem.row_len, steps))
        if split > merge_steps:
            raise UnsupportedOnDevice(f"{op.name} along an axis of {problem.row_len} with {problem.inner} columns "
                                      f"exceeds what llvmpipe's loop limit lets {caps.name!r} run correctly "
                                      "(Mesa's loop limiter cuts loops at 65535 trips); reduce fewer elements per call")
    common = dict(caps=caps, op=op, rule=rule, wg=wg, param=problem.param, count=problem.row_len,
                  outer=problem.rows, inner=problem.inner, nblk=nblk)
    if split == 1:
        passes = (_launch_cols(**common, k_len=problem.row_len, vec=vec, in_dtype=problem.dtype, split=1,
                               chunk=problem.row_len, outer_stride=problem.row_len * problem.inner,
                               first=True, last=True),)
        partials_bytes = 0
    else:
        chunk = _ceil_div(problem.row_len, split)
        split = _ceil_div(problem.row_len, chunk)
        passes = (
            _launch_cols(**common, k_len=problem.row_len, vec=vec, in_dtype=problem.dtype, split=split,
                         chunk=chunk, outer_stride=problem.row_len * problem.inner, first=True, last=False),
            _launch_cols(**common, k_len=split, vec=1, in_dtype=rule.acc, split=1, chunk=split,
                         outer_stride=split * problem.inner, first=False, last=True),
        )
        partials_bytes = _partials_bytes(op, rule, problem.rows * split * problem.inner)
    return LaunchPlan(strategy="columns" if split == 1 else "columns_split_k", sg_mode="none", sg_size=None,
                      reqd_sg="none", wg_size=wg, lanes=1, vec=vec, split=split, acc_dtype=rule.acc,
                      out_dtype=rule.out, device_out_dtype=rule.device_out, host_divide=rule.host_divide,
                      local_mem_bytes=0, partials_bytes=partials_bytes, passes=passes,
                      out_words=2 if op.kind == "wide" else 1)


# Block lengths of compensated float sums (reduce_rows.cl, "accumulation"): vector loads per
# lane accumulator, K steps per column.
ACC_BLOCK = 32
COL_BLOCK = 128
# reduce_rows_state_cpu's var/std: vector steps whose m2 terms add plainly before joining
WELFORD_BLOCK = 8


def _compensated(op, rule) -> bool:
    """Float sums carry (sum, correction) pairs (reduce_rows.cl, "accumulation")."""
    return op.kind == "scalar" and op.combine == "sum" and rule.acc.startswith("float")


def _rescues(op, rule, in_dtype: str, first: bool) -> bool:
    """Float sums of signed terms sum a task again where it came out inf or NaN (reduce_rows.cl,
    RESCUE_SUM): a second pass's partial sums, or elements mapped by none or nan_to_zero."""
    return _compensated(op, rule) and (not first or _element_map(op.map, in_dtype) in ("none", "nan_to_zero"))


# reduce_rows.cl RESCUE_BLOCK on llvmpipe: elements per loop trip of a rescue walk, so that
# walking a chunk of at most RUSTICL_LOOP_TRIPS * 16 elements takes at most 1/16 of the trips
RUSTICL_RESCUE_BLOCK = 256


def _rescue_defines(caps: DeviceCaps, op, rule, in_dtype: str, first: bool) -> dict:
    if _rescues(op, rule, in_dtype, first) and llvmpipe_loop_limited(caps):
        return {"RESCUE_BLOCK": RUSTICL_RESCUE_BLOCK}
    return {}


_MAP_MACRO = {"none": 0, "abs": 1, "square": 2, "nonzero": 3, "notnan": 4, "nan_to_zero": 5, "one": 6}
_FIN_MACRO = {"none": 0, "mean": 1, "sqrt": 2, "var": 3, "std": 4, "index": 5, "lse": 6}
_OPK_MACRO = {"scalar": 0, "welford": 1, "arg": 2, "lse": 3, "wide": 4}


def _identity(combine: str, acc: str) -> str:
    if combine == "sum":
        return "0"
    if combine == "prod":
        return "1"
    if acc.startswith("float"):
        if combine in ("nanmax", "nanmin"):
            return "NAN"  # fmax/fmin skip it, so an all-NaN slice stays NaN (numpy's answer)
        return "(-INFINITY)" if combine == "max" else "INFINITY"
    limits = {"int32": ("INT_MIN", "INT_MAX"), "uint32": ("0", "UINT_MAX"),
              "int64": ("LONG_MIN", "LONG_MAX"), "uint64": ("0", "ULONG_MAX")}
    low, high = limits[acc]
    return low if combine in ("max", "nanmax") else high


def _op_defines(op, rule, in_dtype: str, first: bool, last: bool) -> dict:
    """Macros naming the op and types; shared by every kernel family."""
    acc = rule.acc
    out = rule.device_out if last else acc
    fin = op.finalize if last else "none"
    if fin == "mean" and rule.host_divide:
        fin = "none"
    defines = {
        "IN_T": CL_TYPE[in_dtype], "ACC_T": CL_TYPE[acc], "OUT_T": CL_TYPE[out],
        "ACC_IS_FLOAT": int(acc.startswith("float")), "ACC_BYTES": np.dtype(acc).itemsize,
        "IN_HALF": int(in_dtype == "float16"), "OUT_HALF": int(out == "float16"),
        "FINALIZE": _FIN_MACRO[fin],
        # a second pass reads partial accumulators: the element map already ran
        "MAP": _MAP_MACRO[_element_map(op.map, in_dtype)] if first else 0,
    }
    combine = op.combine
    if combine in ("nanmax", "nanmin") and not acc.startswith("float"):
        combine = combine[3:]  # integers have no NaN
    if op.kind == "welford" and first:
        # how the element minus its row's pilot is formed (reduce_state.cl, TO_ACC): exactly
        # in 64-bit integers where the input is an integer
        kind, size = np.dtype(in_dtype).kind, np.dtype(in_dtype).itemsize
        defines["SHIFT_MODE"] = 0 if kind not in "iub" else (1 if size <= 4 else (2 if kind == "i" else 3))
    if op.kind == "welford" and rule.var_scale:
        defines["SHIFT_SCALE"] = rule.var_scale  # every pass: the last one scales var back
    if op.kind == "wide":
        defines["WIDE_SIGNED"] = int(acc == "int64")
    if op.kind == "scalar":
        defines[f"OP_{combine.upper()}"] = 1
        defines["IDENTITY"] = _identity(combine, acc)
        if _prod_sides(op, rule) and not (first and last):
            defines["PROD_SIDES"] = 1 if first else 2
        if _sum_sides(op, rule) and not (first and last):
            defines["SUM_SIDES"] = 1 if first else 2
    elif op.kind == "arg":
        defines["ARG_MAX" if combine == "max" else "ARG_MIN"] = 1
        defines["IDENTITY"] = _identity(combine, acc)
    return defines


def _prod_sides(op, rule) -> bool:
    """Float products split in chunks leave each chunk's product also as mantissa and 64-bit
    exponent, beside the plain partials (reduce_rows.cl, PROD_SIDES): a chunk's product can
    pass the range where the row's does not."""
    return op.kind == "scalar" and op.combine == "prod" and rule.acc.startswith("float")


def _sum_sides(op, rule) -> bool:
    """Float sums of signed terms (sum, nansum, mean: reduce_rows.cl RESCUE_SUM) split in
    chunks leave each chunk's sum also times 2^-64, beside the plain partials (SUM_SIDES): a
    chunk's sum can pass the range where the row's does not."""
    return (op.kind == "scalar" and op.combine == "sum" and rule.acc.startswith("float")
            and op.map in ("none", "nan_to_zero"))


def _partials_bytes(op, rule, parts: int) -> int:
    """Bytes of the partials buffer holding ``parts`` partial results of a split plan."""
    if op.kind != "scalar":
        return parts * STATE_BYTES
    acc = np.dtype(rule.acc).itemsize
    if _prod_sides(op, rule):
        return parts * (2 * acc + 8)  # P and M (accumulators), then E (8-byte aligned: 2 * acc * parts)
    if _sum_sides(op, rule):
        return parts * 2 * acc  # P, then S (SUM_SIDES)
    return parts * acc


def _element_map(name: str, in_dtype: str) -> str:
    if np.dtype(in_dtype).kind == "f" or name not in ("nan_to_zero", "notnan"):
        return name
    # integers have no NaN: nansum is sum; every element counts as not-NaN
    return "none" if name == "nan_to_zero" else "one"


def _row_family(op):
    return _launch_rows if op.kind == "scalar" else _launch_rows_state


def reciprocal(acc, count: int) -> float:
    """1 / count correctly rounded in the accumulator's float type, the count first rounded to
    it as the kernel's ``(ACC_T)mean_count`` is (reduce_rows.cl ``mean_div``'s ``mean_inv``:
    made here, not per work-item, because a divide a work-item cost the shapes of about one row
    a team as much as the divide a row it replaces); 0 for integer accumulators, whose means the
    host finishes."""
    dtype = np.dtype(acc)
    if dtype.kind != "f" or count == 0:
        return 0
    return float(dtype.type(1) / dtype.type(count))


def _groups(caps: DeviceCaps, needed: int) -> int:
    # Enough groups to fill every compute unit many times over; the rest is grid-stride.
    max_groups = max(1, caps.compute_units) * (64 if caps.device_type == "gpu" else 32)
    return max(1, min(needed, max_groups))


def _finish(caps, kernel_file, entry, defines, cl_std, groups, wg, scalars, acc, first, last) -> KernelLaunch:
    if caps.backend == "opencl" and caps.implementation == "nvidia":
        # NVIDIA's OpenCL compiler turns vloadn (element alignment only) into n scalar loads;
        # ALIGNED_VLOAD makes cl_dialect_opencl.h read 16-byte vectors after a scalar head.
        defines = {**defines, "ALIGNED_VLOAD": 1}
    pairs = tuple(sorted((k, str(v)) for k, v in defines.items()))
    return KernelLaunch(kernel_file=kernel_file, entry=entry, defines=pairs, options=build_options(pairs, cl_std),
                        global_size=groups * wg, local_size=wg, scalars=tuple(scalars), acc_dtype=acc,
                        reads="input" if first else "partials", writes="output" if last else "partials")


def _rows_defines(caps, op, rule, sg_mode, sg_size, reqd, wg, lanes, vec, split, in_dtype, first, last, unroll):
    defines = _op_defines(op, rule, in_dtype, first, last)
    defines.update({"WG_SIZE": wg, "LANES": lanes, "VEC": vec, "SPLIT": split,
                    "SG_MODE": _SG_MODE_MACRO[sg_mode], "SG_SIZE": sg_size or 0, "REQD_SG": _REQD_MACRO[reqd]})
    if unroll is not None:
        defines["UNROLL"] = unroll
    # inline PTX needs no sub-group built-ins, hence no -cl-std beyond the driver's default
    return defines, (caps.cl_std if sg_mode not in ("local", "shuffle_ptx") else None)


def _launch_rows(*, caps, op, rule, sg_mode, sg_size, reqd, wg, rows, row_len, lanes, vec, in_dtype,
                 split, chunk, first, last, param, count, unroll=None, cpu_items=0) -> KernelLaunch:
    defines, cl_std = _rows_defines(caps, op, rule, sg_mode, sg_size, reqd, wg, lanes, vec, split, in_dtype, first,
                                    last, unroll)
    compensated = _compensated(op, rule)
    long_task = _ceil_div(min(chunk, row_len), vec) >= CPU_SUM_UNROLL_MIN_LOADS
    cpu_unroll = CPU_SUM_UNROLL if compensated and long_task else CPU_UNROLL
    if compensated:
        # reduce_rows.cl "accumulation": split partials (few, large) each join the compensated
        # sum; a lane (a cpu_blocks vector accumulator) with at most a block of vector loads
        # runs the plain code (block 0)
        # one-lane teams (llvmpipe's rows_per_sg) hold whole rows like a cpu_blocks work-item:
        # their VEC accumulators' chains are the row's length, not shortened by a team
        block = CPU_ACC_BLOCK if cpu_items or lanes == 1 else ACC_BLOCK
        loads = _ceil_div(_ceil_div(min(chunk, row_len), vec), cpu_unroll if cpu_items else lanes)
        defines["ACC_BLOCK"] = 1 if not first else (0 if loads <= block else block)
    defines.update(_rescue_defines(caps, op, rule, in_dtype, first))
    scalars = [("n_rows", "u64", rows), ("row_len", "u64", row_len), ("row_stride", "u64", row_len),
               ("chunk_len", "u64", chunk), ("mean_count", "u64", count), ("mean_inv", "acc", reciprocal(rule.acc, count))]
    if cpu_items:  # cpu_blocks: reduce_rows_cpu, one contiguous block of tasks per work-item
        defines.update({"CPU_BLOCKS": 1, "UNROLL": cpu_unroll})
        groups = max(1, _ceil_div(min(cpu_items, rows * split), wg))
        return _finish(caps, "reduce_rows.cl", "reduce_rows_cpu", defines, None, groups, wg, scalars, rule.acc,
                       first, last)
    needed = _ceil_div(rows * split, wg // lanes)
    # llvmpipe counts a work-item's loop trips over every task of its grid stride: with rescue
    # walks (a row of infinities each) one task per team, so they do not add up past the limiter
    groups = needed if "RESCUE_BLOCK" in defines else _groups(caps, needed)
    return _finish(caps, "reduce_rows.cl", "reduce_rows", defines, cl_std, groups, wg, scalars, rule.acc, first, last)


def _launch_rows_state(*, caps, op, rule, sg_mode, sg_size, reqd, wg, rows, row_len, lanes, vec, in_dtype,
                       split, chunk, first, last, param, count, unroll=None, cpu_items=0) -> KernelLaunch:
    defines, cl_std = _rows_defines(caps, op, rule, sg_mode, sg_size, reqd, wg, lanes, vec, split, in_dtype, first,
                                    last, unroll)
    defines.update({"ENTRY": 1, "OPK": _OPK_MACRO[op.kind], "IN_STATES": int(not first),
                    "OUT_STATES": int(not last or op.kind == "wide")})  # wide sums leave as two words
    scalars = [("n_rows", "u64", rows), ("row_len", "u64", row_len), ("row_stride", "u64", row_len),
               ("chunk_len", "u64", chunk), ("count", "u64", count), ("param", "acc", param)]
    if cpu_items:  # cpu_blocks: reduce_rows_state_cpu, one contiguous block of tasks per work-item
        defines["ENTRY"] = 3
        if op.kind == "welford" and first:
            # m2 joins a compensated pair every WELFORD_BLOCK steps of 2 * vec elements; 0 where
            # every task is one block (reduce_state.cl, cpu_task)
            defines["WELFORD_BLOCK"] = 0 if min(chunk, row_len) <= WELFORD_BLOCK * 2 * vec else WELFORD_BLOCK
        groups = max(1, _ceil_div(min(cpu_items, rows * split), wg))
        return _finish(caps, "reduce_state.cl", "reduce_rows_state_cpu", defines, None, groups, wg, scalars,
                       rule.acc, first, last)
    groups = _groups(caps, _ceil_div(rows * split, wg // lanes))
    return _finish(caps, "reduce_state.cl", "reduce_rows_state", defines, cl_std, groups, wg, scalars, rule.acc, first, last)


def _launch_cols(*, caps, op, rule, wg, outer, inner, k_len, vec, in_dtype, split, chunk, outer_stride,
                 first, last, param, count, nblk) -> KernelLaunch:
    defines = _op_defines(op, rule, in_dtype, first, last)
    defines.update({"WG_SIZE": wg, "VEC": vec, "SPLIT": split})
    if op.kind == "scalar":
        defines["NBLK"] = nblk
    if _compensated(op, rule):
        # split partials each join their column's compensated sum; a K range of one block
        # runs the plain code (block 0)
        defines["COL_BLOCK"] = 1 if not first else (0 if chunk <= COL_BLOCK else COL_BLOCK)
    defines.update(_rescue_defines(caps, op, rule, in_dtype, first))
    scalars = [("outer", "u64", outer), ("k_len", "u64", k_len), ("inner", "u64", inner),
               ("outer_stride", "u64", outer_stride), ("k_stride", "u64", inner),
               ("chunk_len", "u64", chunk), ("count", "u64", count)]
    groups = _groups(caps, _ceil_div(outer * split * _ceil_div(inner, vec * nblk), wg))
    if op.kind == "scalar":
        # reduce_rows.cl's vector accumulators; its row entry compiles beside with neutral macros
        defines.update({"LANES": 1, "SG_MODE": 0, "SG_SIZE": 0, "REQD_SG": 0})
        return _finish(caps, "reduce_rows.cl", "reduce_cols", defines, None, groups, wg, scalars, rule.acc, first, last)
    defines.update({"ENTRY": 2, "OPK": _OPK_MACRO[op.kind], "IN_STATES": int(not first),
                    "OUT_STATES": int(not last or op.kind == "wide")})
    scalars.append(("param", "acc", param))
    return _finish(caps, "reduce_state.cl", "reduce_cols", defines, None, groups, wg, scalars, rule.acc, first, last)
