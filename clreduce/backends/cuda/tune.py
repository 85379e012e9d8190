"""CUDA-specific plan adjustments (pure: no CuPy, no device).

The shared planner (``clreduce.plan``) decides from ``DeviceCaps``; this module keeps its
decisions where they are good for NVIDIA GPUs and re-derives the launch shape where
measurements on an H100 showed a better one (see ``cuda_plan``). Everything here edits
plans through ``relaunch`` so a plan stays self-consistent: defines, grid, chunk length
and the split's second pass always agree.
"""

from __future__ import annotations

import dataclasses

from ...plan import Force, KernelLaunch, LaunchPlan, Problem, plan
from .launch import nvrtc_options

_SG_MODE_NAME = {0: "local", 1: "builtin", 2: "shuffle_khr", 3: "shuffle_qcom"}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def defines_of(launch: KernelLaunch) -> dict[str, str]:
    return dict(launch.defines)


def scalar(launch: KernelLaunch, name: str):
    """The value of the kernel scalar argument ``name`` (``n_rows``, ``chunk_len``, ...)."""
    for key, _kind, value in launch.scalars:
        if key == name:
            return value
    raise KeyError(f"{launch.entry} has no scalar {name!r}")


def with_scalars(launch: KernelLaunch, **values) -> KernelLaunch:
    names = {key for key, _, _ in launch.scalars}
    unknown = set(values) - names
    if unknown:
        raise KeyError(f"{launch.entry} has no scalars {sorted(unknown)}")
    scalars = tuple((key, kind, values.get(key, value)) for key, kind, value in launch.scalars)
    return dataclasses.replace(launch, scalars=scalars)


_ROW_ENTRIES = ("reduce_rows", "reduce_rows_state")


def _tasks(launch: KernelLaunch, d: dict) -> int:
    """Independent work items of a launch: team tasks for row kernels, work-items for columns."""
    if launch.entry in _ROW_ENTRIES:
        return int(scalar(launch, "n_rows")) * int(d["SPLIT"])
    inner = int(scalar(launch, "inner"))
    return int(scalar(launch, "outer")) * int(d["SPLIT"]) * _ceil_div(inner, int(d["VEC"]))


def relaunch(launch: KernelLaunch, *, groups: int | None = None, max_groups: int | None = None,
             **changes) -> KernelLaunch:
    """``launch`` with some defines changed (``LANES=8``, ``UNROLL=2``, ...), CUDA build
    options, and the grid recomputed for the new team count: ``groups`` exactly, else as many
    as the tasks need, at most ``max_groups`` (default: the grid ``launch`` had)."""
    d = defines_of(launch)
    d.update({k: str(v) for k, v in changes.items()})
    wg = int(d["WG_SIZE"])
    teams = 1
    rows_entry = launch.entry in _ROW_ENTRIES
    if rows_entry:
        lanes = int(d["LANES"])
        if wg % lanes or lanes & (lanes - 1):
            raise ValueError(f"LANES={lanes} must be a power of two dividing WG_SIZE={wg}")
        if int(d.get("SG_MODE", 0)) == 1 and 1 < lanes < 32:
            d["SG_MODE"] = "2"  # narrow teams need the butterfly (reduce_rows.cl #errors otherwise)
        teams = wg // lanes
    if groups is None:
        cap = max_groups if max_groups is not None else max(1, launch.global_size // launch.local_size)
        per_group = teams if rows_entry else wg
        groups = max(1, min(_ceil_div(_tasks(launch, d), per_group), cap))
    pairs = tuple(sorted(d.items()))
    return dataclasses.replace(launch, defines=pairs, options=nvrtc_options(pairs),
                               global_size=int(groups) * wg, local_size=wg)


def with_lanes(p: LaunchPlan, lanes: int, **changes) -> LaunchPlan:
    """A single-pass row plan re-cut into teams of ``lanes`` threads."""
    if len(p.passes) != 1 or p.passes[0].entry not in _ROW_ENTRIES:
        raise ValueError("with_lanes is for single-pass row plans")
    launch = relaunch(p.passes[0], LANES=lanes, **changes)
    d = defines_of(launch)
    strategy = "rows_per_sg" if lanes < 32 else ("sg_per_row" if lanes == 32 else "wg_per_row")
    return dataclasses.replace(p, strategy=strategy, lanes=lanes, sg_mode=_SG_MODE_NAME[int(d["SG_MODE"])],
                               passes=(launch,))


def with_split(p: LaunchPlan, problem: Problem, split: int, *, lanes: int | None = None,
               **changes) -> LaunchPlan:
    """A split-K row plan with ``split`` chunks per row (rounded so chunks are whole
    vectors); the second pass is re-cut to match."""
    if len(p.passes) != 2 or p.passes[0].entry not in _ROW_ENTRIES:
        raise ValueError("with_split needs a split_k row plan (two passes)")
    first, second = p.passes
    d = defines_of(first)
    vec = int(d["VEC"])
    chunk = _ceil_div(_ceil_div(problem.row_len, split), vec) * vec
    split = _ceil_div(problem.row_len, chunk)
    first = with_scalars(first, chunk_len=chunk)
    first = relaunch(first, SPLIT=split, LANES=lanes or int(d["LANES"]), max_groups=1 << 30, **changes)
    d2 = defines_of(second)
    wg2 = int(d2["WG_SIZE"])
    lanes2 = min(wg2, _pow2_floor(split))
    if int(d2["SG_MODE"]) == 1 and lanes2 < 32:
        lanes2 = min(32, wg2)
    second = with_scalars(second, row_len=split, row_stride=split, chunk_len=split)
    second = relaunch(second, LANES=lanes2, max_groups=1 << 30)
    partials = problem.rows * split * (p.partials_bytes // max(1, problem.rows * p.split))
    return dataclasses.replace(p, split=split, lanes=int(defines_of(first)["LANES"]), partials_bytes=partials,
                               passes=(first, second))


def custom_plan(caps, problem: Problem, *, lanes: int | None = None, wg: int | None = None,
                vec: int | None = None, split: int | None = None, sg_mode: str | None = None,
                groups: int | None = None, **extra_defines) -> LaunchPlan:
    """A plan with explicit choices (for sweeps): the planner's plan for the forced
    strategy, re-cut to ``lanes`` / ``split`` / ``groups`` and extra defines (UNROLL, ...)."""
    strategy = "split_k" if split and split > 1 else None
    p = plan(caps, problem, Force(strategy=strategy, wg_size=wg, vec=vec, sg_mode=sg_mode))
    if split and split > 1:
        p = with_split(p, problem, split, lanes=lanes, **extra_defines)
    elif len(p.passes) == 1 and p.passes[0].entry in _ROW_ENTRIES:
        p = with_lanes(p, lanes or p.lanes, **extra_defines)
    if groups is not None:
        first = relaunch(p.passes[0], groups=groups)
        p = dataclasses.replace(p, passes=(first,) + p.passes[1:])
    return p


# ---- the CUDA heuristic (measured on an H200, 132 SMs; tools/bench_cuda.py --sweep) ----------
# Vectors (16-byte loads) each lane of a row team reads, by row length in bytes: short rows
# want narrow teams with a few loads each (more rows per warp, fewer shuffle steps), rows of
# ~1-8 KB a half-warp or so, long rows the planner's block per row. 2-byte and 1-byte types
# convert more values per load and prefer fewer lanes. Sweep, GB/s, planner -> tuned:
# float32 16777216x16 3416 -> 4032, 1048576x32 3346 -> 3687, float16 1048576x32 3121 -> 3407,
# 65536x4096 4271 -> 4464, 8192x1000 2041 -> 2207 (others within 1-2% of the best found).
def _vectors_per_lane(row_bytes: int, itemsize: int) -> int:
    if itemsize >= 4:
        return 2 if row_bytes <= 128 else 4 if row_bytes <= 1024 else 16 if row_bytes <= 8192 else 4
    return 4 if row_bytes <= 1024 else 8 if row_bytes <= 8192 else 4


# Split-K: chunks of about SPLIT_CHUNK_BYTES, and at least SPLIT_MIN_TASKS_PER_SM chunk tasks
# (one 256-thread block each) per SM; 8 loads in flight per lane. Planner (4-8 tasks per SM,
# 4 loads) -> tuned, GB/s: float32 64x4194304 4148 -> 4443, 1x268435456 4265 -> 4441;
# float16 64x4194304 3816 -> ~4240, 1x268435456 3795 -> ~4240.
SPLIT_CHUNK_BYTES = 512 * 1024
SPLIT_MIN_TASKS_PER_SM = 12
SPLIT_UNROLL = 8
SPLIT_MIN_CHUNK = 8192


def _unroll(vectors_per_lane: int) -> int:
    if vectors_per_lane >= 32:
        return 8
    return max(1, min(4, _pow2_floor(vectors_per_lane)))


def cuda_plan(caps, problem: Problem, force: Force | None = None) -> LaunchPlan:
    """The plan the CUDA backend runs: the shared planner's, re-cut where the CUDA sweep
    found better team widths, unrolling and split counts, with CUDA build options.

    Only row plans of the scalar kernel (``reduce_rows``) are re-cut, and only when the
    caller forced neither strategy, work-group size nor vector width; everything else runs
    exactly as planned (a forced variant is the variant asked for).
    """
    force = force or Force()
    p = plan(caps, problem, force)
    first = defines_of(p.passes[0])
    retune = (force.strategy is None and force.wg_size is None and force.vec is None
              and p.passes[0].entry == "reduce_rows")
    if not retune:
        return dataclasses.replace(p, passes=tuple(relaunch(launch) for launch in p.passes))
    vec = int(first["VEC"])
    wg = int(first["WG_SIZE"])
    itemsize = _itemsize(problem.dtype)
    if len(p.passes) == 2:
        split = max(_ceil_div(SPLIT_MIN_TASKS_PER_SM * max(1, caps.compute_units), problem.rows),
                    _ceil_div(problem.row_len * itemsize, SPLIT_CHUNK_BYTES))
        split = max(2, min(split, problem.row_len // SPLIT_MIN_CHUNK))
        return with_split(p, problem, split, lanes=wg, UNROLL=SPLIT_UNROLL)
    per_lane = _vectors_per_lane(problem.row_len * itemsize, itemsize)
    lanes = max(1, min(wg, _pow2_floor(_ceil_div(problem.row_len, vec * per_lane))))
    vectors = _ceil_div(problem.row_len, vec * lanes)
    return with_lanes(p, lanes, UNROLL=_unroll(vectors))


def _itemsize(dtype: str) -> int:
    import numpy as np

    return np.dtype(dtype).itemsize
