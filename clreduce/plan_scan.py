"""Planner for the scans along rows (cumsum, cumprod, logcumsumexp; ``row_scan.cl``): pure, no
device.

CPUs give each row one work-item (a serial scan streams through the cache); GPUs scan tiles of
a row with a team's sub-group or local-memory scan, split long rows over work-groups
(reduce-then-scan: three launches), and on CUDA run a decoupled look-back instead (one read
of the row). Split out of :mod:`clreduce.plan_rowops`, whose row types and helpers it uses;
``plan_rowops.plan_row`` hands scans here.
"""

from __future__ import annotations

import os

import numpy as np

from .caps import DeviceCaps
from .kernels import build_options
from .ops import CL_TYPE
from .plan import (_REQD_MACRO, Force, _SG_MODE_MACRO, UnsupportedOnDevice, _ceil_div, _choose_sg_size,
                   _choose_wg, _groups, _pow2_floor, _shuffle_mode, llvmpipe_loop_limited)
from .plan_rowops import (CPU_OWN_EXP_IMPLEMENTATIONS, FAMILIES, LLVMPIPE_TRIP_BUDGET, RowForce, RowPass, RowPlan,
                          RowProblem, _resident_blocks, _trip_groups, acc_dtype_of, out_dtype_of, require_fp64,
                          row_sg_mode)


# Scans: consecutive elements a lane scans per tile. GPUs: 16 bytes of input, one vector load
# per lane with the lanes' loads adjacent (32 bytes of float32 per lane left every warp access
# half-used: float32 cumsum at 57 % of an H100's copy where float16's 16-byte runs gave 93 %).
# CPUs: 64 bytes of accumulators.
SCAN_ITEMS_BYTES = 16
# row_scan.cl SCAN_PREFETCH: CUDA row scans (PHASE 0 and 1, teams of lanes) whose task runs at
# least this many tiles load the next tile while they scan one. H200, public call, GB/s, two
# alternating rounds (benchmarks/scan_prefetch_h200_2026-11-29/): cumsum float32 4096 x 65536
# (512 tiles) 3223-3255 -> 3427-3453 (81 % of copy), logcumsumexp 1470-1479 -> 1606; float16
# level; rows of 4096 (16-32 tiles) level to -1.5 %; a row of one tile (442368 x 128) lost
# 11-13 % and rows of 16 9-14 % (a padding tile's test a trip), hence the threshold.
SCAN_PREFETCH_MIN_TILES = 64
SCAN_ITEMS_CPU_BYTES = 64
# Split a scanned row over work-groups only when it is this long (three launches and two
# extra reads of partials must pay off), into chunks of at least SCAN_SPLIT_MIN_CHUNK.
SCAN_SPLIT_MIN_ROW = 1 << 15
SCAN_SPLIT_MIN_CHUNK = 1 << 13
# CPUs: a work-group runs on one core; small groups of one-work-item rows spread over cores.
SCAN_CPU_WG = 16
# ... and rows of up to this many elements take one trip a work-item (a group for every
# SCAN_CPU_WG rows), where plan.py's 32 groups a core and a grid stride gave each work-item
# rows 1024 apart. Device arrays, float32 cumsum along the rows, ms a call, stride / one trip,
# two alternating rounds (benchmarks/scan_cpu_own_access_2026-11-29/one_trip.txt): 250000 x 32
# pip's PoCL 15.0-15.1 / 4.9-5.4, Debian's 15.5 / 3.9-4.2, Intel 19.2 / 8.2; 125000 x 64
# 5.6-6.3 / 4.7-4.8, 5.6-5.8 / 3.7-4.0, 13.9-14.2 / 8.0; rows of 1000 4-10 % faster, of 4096
# level.
SCAN_CPU_ONE_TRIP_LEN = 1024
# row_scan.cl SCAN_OWN_ACCESS on these CPU runtimes: a lane's float and integer loads and stores
# as element loops, not vloadn / vstoren (calls on PoCL). cumsum along the rows of device
# arrays, ms a call, vload / loops, two alternating rounds on a 2-core AMD EPYC with AVX-512
# (benchmarks/scan_cpu_own_access_2026-11-29/ab.txt): float32 250000 x 32 / 8000 x 1000 /
# 122 x 65536, pip's PoCL 20.1 / 7.0 / 6.7-8.0 -> 14.7 / 4.8-5.3 / 4.9, Debian's 18.3-18.5 /
# 9.2-9.3 / 9.3-9.4 -> 15.2-15.3 / 4.3-4.5 / 3.5; int32 (int64 sums) pip 25.6 / 11.1 / 11.1 ->
# 18.0-18.3 / 8.0 / 7.9. Intel's runtime lost with the loops (20 -> 25 ms). float16 keeps
# vload_halfn / vstore_halfn.
SCAN_OWN_ACCESS_IMPLEMENTATIONS = ("pocl",)
# ... and with them row_scan.cl SCAN_UNROLL (a lane's loops unrolled by pragma), a lane's runs
# capped at SCAN_UNROLL_ITEMS_BYTES. PoCL kept a lane's running values in a loop over a stack
# array: a vector store, ITEMS scalar stores, then a vector load that the store buffer cannot
# forward. Unrolled, 8 elements a lane stay in registers; 16 (Debian's PoCL, 64-byte vectors)
# became a 16-long chain of adds through memory, 5-10 % slower than the loop. Device arrays, ms
# a call (best of two or three alternating rounds), 2-core AMD EPYC with AVX-512
# (benchmarks/scan_cpu_unroll_2026-11-29/), 62500 x 128 / 250000 x 32 / 8000 x 1000: pip's
# PoCL 3.0 (already 32-byte runs) float32 cumsum 4.6 / 5.0 / 4.4 -> 1.8 / 2.2 / 1.7, int32 7.5 /
# 7.9 / 7.4 -> 2.4 / 2.3 / 2.2, float64 8.5 / 8.8 / 8.4 -> 3.6 / 3.0 / 3.4; Debian's PoCL 3.1
# float32 3.7 / 4.0 / 3.5 -> 1.9 / 3.4 / 1.8 (32-byte runs without the pragma: 4.6 / 4.9 / 4.4),
# int32 6.4 / 6.4 / 6.2 -> 2.7 / 2.6 / 2.8, float64 6.2 / 6.9 / 6.1 -> 2.7 / 3.0 / 2.8, float16
# 9.3 / 9.5 / 9.3 -> 3.4 / 3.7 / 3.9. Intel's runtime and rusticl were level with the pragma.
# Sums and products only: float64 logcumsumexp (an exp and a log an element, no CPU_OWN_EXP)
# ran 30 % slower so on Debian's PoCL (204 -> 283 ms a call).
SCAN_UNROLL_ITEMS_BYTES = 32
SCAN_UNROLL_OPS = ("cumsum", "cumprod")
# Intel's CPU runtime: one-lane sums and products ask not to be vectorised across work-items
# (row_scan.cl INTEL_VEC_LEN_1, where the extension is listed) and take no sub-group mode. It
# had put a group's work-items in SIMD lanes, a row each, every element a gather and a scatter:
# ~8 ms a call on 32 MB of rows of any length. Device arrays, ms a call, main / hint, two
# alternating rounds (benchmarks/scan_cpu_own_access_2026-11-29/intel_hint.txt), 250000 x 32 /
# 8000 x 1000 / 122 x 65536: float32 cumsum 8.3 / 8.4 / 7.9-8.1 -> 2.5-2.6 / 2.4-2.5 / 2.4-2.7,
# float64 8.7 / 9.1 / 8.2-8.3 -> 4.2 / 3.9-4.4 / 4.0-4.2, int32 (int64 sums) 8.4 / 8.9 / 8.2-8.3
# -> 3.1-3.3 / 3.4-3.5 / 3.5, float32 cumprod 8.3 / 8.4 / 7.9 -> 2.3-2.4 / 2.1 / 2.1. logcumsumexp
# lost with the hint (its exp and log a lane: 50-70 -> 83-105 ms) and keeps the vectoriser.
INTEL_SCAN_VEC_LEN_1 = ("cumsum", "cumprod")
# The decoupled look-back (CUDA only: it needs blocks that wait on earlier blocks to make
# progress, which OpenCL does not promise). Where the planner would split a few long rows,
# reduce-then-scan reads the input twice (an H100's float16 cumsum of one 2**28 row: 43 % of
# copy); the look-back reads it once. A tile is a block of LOOKBACK_WG threads, each holding
# runs of 16 bytes of input, LOOKBACK_ACC_BYTES of accumulators in all (int8 input into int64
# sums: one run; float32: eight).
LOOKBACK_WG = 256
LOOKBACK_ACC_BYTES = 128
# Float accumulators, by input element size: (threads per block, share of the SM's threads
# kept resident through MIN_BLOCKS). A block waits a trip or two to L2 for its prefix with its
# tile in registers, so the tiles in flight per SM set the speed. Sweep on an H200, float32 /
# float16, one row of 2**28, GB/s of a 4200 GB/s copy (benchmarks/cumsum_lookback_h200_2026-11-26):
# 256 threads x 4 runs uncapped 1818 / 1164; at 4 blocks 2115 / 1878; 128 x 8 at 6 blocks
# 2592 / 1768; 128 x 4 at 8 blocks 2087 / 1764. On an H100 (copy 3000), float32 128 x 8 at
# 6 / 7 / 8 blocks: 2156 / 2226 / 2215 (sweep_h100.txt there).
LOOKBACK_FLOAT = {4: (128, 0.4375), 2: (256, 0.5)}
# The look-back with blocks that stay (row_scan.cl LB_AHEAD, sm_80+ for cp.async): one launch
# of as many blocks as the SMs hold, each taking tile after tile; while a block waits for a
# tile's prefix its other sub-groups (all but the first, since 2026-11-29) copy the next tile
# into shared memory and publish that tile's total (and each run's). The tile is read from
# shared memory once more, for its running values, and never held in registers.
# A block per tile holds its tile in registers with nothing in flight while it waits (a row
# of one tile, nothing to wait for, ran at 96 % of copy; a row of 2**28 at 75 %).
# (threads per block, share of an SM's threads, runs of 16 bytes per thread) by input
# element size, float accumulators. H100, GPU time of float32 / float16 1 x 2**28, GB/s of a
# 3000 GB/s copy (benchmarks/cumsum_lookback_ahead_2026-11-26): a block per tile 2219 / 1670;
# these shapes 2470-2520 / 2340-2435 (6 blocks per SM: what two 16 KB copies leave of
# 228 KB); 8 KB tiles at 8-10 blocks 2074-2115 / 2011-2102.
LOOKBACK_AHEAD = {4: (128, 0.375, 8), 2: (128, 0.375, 8)}
# LB_AHEAD sums and products take their rounds' team prefixes together (row_scan.cl
# LB_PREFIX_BATCH: the run totals loaded, then the prefixes, then the segment totals stored,
# where a shared-memory store between rounds had kept them apart) as butterflies of xor
# shuffles (sub-group mode shuffle: five shuffles a prefix where the built-in reduce and
# scan take ten). H200, GB/s of the public call, two alternating rounds
# (benchmarks/cumsum_lookback_trace_h200_2026-11-29): float32 1 x 2**28 3030-3032 -> 3115-3120,
# 64 x 2**22 3022 -> 3127, float16 1 x 2**28 2903-2927 -> 2998-3014; the run prefixes' phase
# of a tile 1.3 -> 0.8 us. logcumsumexp keeps its rounds apart (five logaddexp a prefix).
LOOKBACK_PREFIX_BATCH_OPS = ("cumsum", "cumprod")
LOOKBACK_GROUP = 32  # tiles per group of the look-back's chain (row_scan.cl LB_GROUP)


def lookback_workspace(rows: int, row_len: int, tile: int, acc_bytes: int) -> tuple[int, int]:
    """(32-bit words PHASE 3 clears, bytes) of the look-back's workspace, as row_scan.cl lays
    it out: a 4-word counter, two sets of flag words (rows past the float range, SCAN_RESCUE;
    flag_words each), then a slot per tile and two per group (a total, an inclusive prefix) --
    a 64-bit word each (value and ready bit) for 4-byte accumulators, else a flag word each
    and the 8-byte values after them."""
    tiles = _ceil_div(row_len, tile)
    slots = rows * tiles + 2 * rows * _ceil_div(tiles, LOOKBACK_GROUP)
    head = 4 + 2 * flag_words(rows)
    if acc_bytes == 4:
        words = head + 2 * slots
        return words, 4 * words
    words = head + slots
    return words, (words + 1) // 2 * 8 + slots * acc_bytes


def scan_rescues(op: str, dtype: str) -> bool:
    """row_scan.cl SCAN_RESCUE: float sums (not of float16, whose float32 sums cannot pass the
    range) and float products scan a row again in row order where a partial left the range."""
    acc = acc_dtype_of(op, dtype)
    return acc.startswith("float") and (op == "cumprod" or (op == "cumsum" and dtype != "float16"))


def flag_words(rows: int) -> int:
    """row_scan.cl FLAG_WORDS: a flag word a row, padded to a multiple of 16 (PHASE 4 reads
    16 at a time)."""
    return _ceil_div(rows, 16) * 16


def has_walk_pass(p: RowPlan) -> bool:
    """Whether a scan plan ends with PHASE 4 launches (rows' flags in its carries buffer)."""
    return any(dict(launch.defines).get("PHASE") == "4" for launch in p.passes)


def rescue_bytes(p: RowPlan, rows: int, acc_bytes: int) -> int:
    """Bytes of a scan's rescue area in its carries buffer (row_scan.cl scan_flags; a split
    scan's after its carries, 16-byte aligned): the rows' flags (two sets where split,
    FLAG_SETS), then, where PHASE 4 walks rows in segments (SCAN_WALK_SEG: llvmpipe's long
    rows), the walk's state between them, a long and an accumulator a row."""
    if not has_walk_pass(p):
        return 0  # the scan's teams walk their rows themselves (SCAN_WALK_INLINE): no flags
    segmented = any("SCAN_WALK_SEG" in dict(launch.defines) for launch in p.passes)
    return 4 * flag_words(rows) * (2 if p.split > 1 else 1) + (rows * (8 + acc_bytes) if segmented else 0)


# row_scan.cl SCAN_WALK_INLINE: a team's tasks, one bit each in a 32-bit word
WALK_INLINE_TASKS = 32

# llvmpipe: elements a PHASE 4 launch walks per row (32 a loop trip; see LLVMPIPE_LOOP_LIMIT)
WALK_SEG_LLVMPIPE = (LLVMPIPE_TRIP_BUDGET - 16) * 32


def scan_tile_trips(items: int, lanes: int) -> int:
    """Upper bound on a scan tile's loop back-edges: ITEMS loads, the lane's scan, the prefix
    added, ITEMS stores, the team prefix."""
    return 4 * items + lanes.bit_length() + 2


def plan_scan(caps: DeviceCaps, problem: RowProblem, force: RowForce | None = None) -> RowPlan:
    """Plan a scan (cumsum, cumprod, logcumsumexp) along the rows; ``nper`` holds ITEMS.

    CPUs give each row one work-item (a serial scan streams through the cache). GPUs give a
    row a team: a sub-group (xor-butterfly prefix, or the built-in exclusive scan for sums)
    where the device has one, else up to a work-group with a local-memory prefix.
    """
    force = force or RowForce()
    if force.cache not in (None, "none"):
        raise UnsupportedOnDevice(f"{problem.op} is a scan: it has no row cache to force")
    acc = acc_dtype_of(problem.op, problem.dtype)
    require_fp64(caps, problem, acc)
    acc_bytes = np.dtype(acc).itemsize
    cpu = caps.device_type == "cpu"
    k = problem.row_len
    sg_mode = row_sg_mode(caps, force)
    sg_size, reqd = (None, "none") if sg_mode == "local" else _choose_sg_size(caps, force.sg_size)
    wg = _choose_wg(caps, Force(wg_size=force.wg_size), sg_size)
    if cpu and force.wg_size is None:
        wg = max(min(wg, SCAN_CPU_WG), sg_size or 1)
    cpu_bytes = min(SCAN_ITEMS_CPU_BYTES, caps.vector_bytes_limit or SCAN_ITEMS_CPU_BYTES)
    if _scan_unrolled(caps, problem.op):
        cpu_bytes = min(cpu_bytes, SCAN_UNROLL_ITEMS_BYTES)  # row_scan.cl SCAN_UNROLL's lanes
    items = max(1, min(16, cpu_bytes // acc_bytes if cpu else SCAN_ITEMS_BYTES // np.dtype(problem.dtype).itemsize))
    if force.lanes is not None:
        lanes = force.lanes
        if lanes < 1 or lanes & (lanes - 1) or lanes > wg:
            raise ValueError(f"lanes={lanes} must be a power of two <= the work-group size {wg}")
    else:
        lanes = 1 if cpu else max(1, min(wg, _pow2_floor(_ceil_div(k, items))))
    if lanes == 1 and _intel_scalar_scan(caps, problem.op, force):
        sg_mode, sg_size, reqd = "local", None, "none"  # a lane alone: no collective to take
    if sg_mode == "builtin" and problem.op == "cumsum" and force.lanes is None and lanes > sg_size:
        lanes = sg_size  # the built-in scan spans one sub-group: a row per sub-group, more tiles
    if sg_mode == "builtin" and not (problem.op == "cumsum" and lanes == sg_size):
        if force.sg_mode is not None:
            raise UnsupportedOnDevice("the built-in sub-group scan is a whole-sub-group sum: "
                                      f"{problem.op} with lanes={lanes} (sub-group {sg_size}) cannot use it")
        sg_mode = _shuffle_mode(caps) or "local"
    if sg_mode.startswith("shuffle") and lanes > sg_size:
        if force.lanes is not None:
            if force.sg_mode is not None:
                raise UnsupportedOnDevice(f"shuffle scans stay in one sub-group: lanes={lanes} > {sg_size}")
            sg_mode = "local"
        else:
            lanes = sg_size  # one sub-group per row; more tiles, no barriers
    if sg_mode == "local":
        sg_size, reqd = None, "none"
        lanes = min(lanes, wg)
    local_bytes = wg * acc_bytes if sg_mode == "local" and lanes > 1 else 0
    if local_bytes > caps.local_mem_size:
        raise UnsupportedOnDevice(f"{local_bytes} B of local memory exceeds {caps.name!r}'s {caps.local_mem_size} B")
    kernel_file, entry, _ = FAMILIES[problem.op]
    out = out_dtype_of(problem.op, problem.dtype)
    teams = wg // lanes
    split = 1
    if force.split is not None:
        split = force.split
        if split < 1 or split > k:
            raise ValueError(f"split={split} must be between 1 and the row length {k}")
    elif k >= SCAN_SPLIT_MIN_ROW:
        # few long rows cannot fill the device with one team per row. Twice the teams a
        # device holds at once: an H100's float32 cumsum of 4096 x 65536 ran at 1786 GB/s
        # split in two (4x: the input read twice) and 2523 GB/s unsplit (one warp per row)
        want_tasks = max(1, caps.compute_units) * teams * 2
        split = max(1, min(_ceil_div(want_tasks, problem.rows), _ceil_div(k, SCAN_SPLIT_MIN_CHUNK)))
    lookback = force.lookback
    if lookback is None:
        lookback = _lookback_ok(caps) and force.split is None and split > 1 and sg_mode != "local" \
            and lanes == sg_size
    elif lookback:
        if not _lookback_ok(caps):
            raise UnsupportedOnDevice("the look-back scan needs CUDA on sm_70 or newer (release / acquire "
                                      "flags, __nanosleep): OpenCL promises no progress between work-groups")
        if force.split not in (None, 1):
            raise ValueError(f"split={force.split} and lookback=True exclude each other (the look-back "
                             "tiles the row itself)")
        if sg_mode == "local" or lanes != sg_size:
            raise UnsupportedOnDevice(f"the look-back scans with whole sub-groups: lanes={lanes}, "
                                      f"sub-group mode {sg_mode!r}")
    if lookback:
        return _plan_lookback(caps, problem, force, sg_mode, sg_size, reqd, items)
    tile = lanes * items
    if llvmpipe_loop_limited(caps):
        # a tile runs ITEMS loads, ITEMS stores and the team prefix; see LLVMPIPE_LOOP_LIMIT
        need = _ceil_div(k, ((LLVMPIPE_TRIP_BUDGET - 4) // scan_tile_trips(items, lanes)) * tile)
        if force.split is not None and split < need:
            raise UnsupportedOnDevice(f"split={split} leaves chunks too long for llvmpipe's loop limit "
                                      f"(Mesa's loop limiter): it needs split >= {need} here")
        split = max(split, need)
    chunk = _ceil_div(_ceil_div(k, split), tile) * tile if split > 1 else k
    split = _ceil_div(k, chunk)  # no empty chunk
    if force.split is not None and force.split > 1 and split < 2:
        chunk, split = _ceil_div(k, 2), 2  # a forced split of a short row: two chunks
        split = _ceil_div(k, chunk)

    # CPUs' one-lane scans: PHASE 4 looks for the big inputs (row_scan.cl SCAN_BIG_IN_WALK)
    big_in_walk = {"SCAN_BIG_IN_WALK": 1} if scan_rescues(problem.op, problem.dtype) and cpu and lanes == 1 \
        and not llvmpipe_loop_limited(caps) else {}

    def defines_for(in_dtype, out_dtype, mode, size, req, n_lanes, sp, phase, **more):
        prefetch = caps.backend == "cuda" and n_lanes > 1 and chunk >= SCAN_PREFETCH_MIN_TILES * n_lanes * items
        return _scan_defines(caps, problem.op, acc, in_dtype, out_dtype, wg, mode, size, req, n_lanes, items, sp,
                             phase, **(big_in_walk if phase == 0 else {}), **({"SCAN_PREFETCH": 1} if prefetch else {}),
                             **more)

    def launch(pairs_options, reads, writes, rows, row_len, chunk_len, n_lanes, sp, max_tasks_per_team=None):
        tasks, teams_ = rows * sp, wg // n_lanes
        trips = _ceil_div(chunk_len, n_lanes * items) * scan_tile_trips(items, n_lanes) + 2
        needed = _ceil_div(tasks, teams_)
        one_trip = (caps.device_type == "cpu" and n_lanes == 1 and sp == 1 and row_len <= SCAN_CPU_ONE_TRIP_LEN
                    and not llvmpipe_loop_limited(caps))
        groups = _trip_groups(caps, needed if one_trip else _groups(caps, needed), tasks, teams_, trips,
                              f"{problem.op} of rows of {row_len}")
        if max_tasks_per_team:
            groups = max(groups, _ceil_div(tasks, teams_ * max_tasks_per_team))
        return RowPass(options=pairs_options[1], global_size=groups * wg, local_size=wg, reads=reads, writes=writes,
                       n_rows=rows, row_len=row_len, chunk_len=chunk_len, defines=pairs_options[0])

    rescue = scan_rescues(problem.op, problem.dtype)
    walk_inline = rescue and split == 1 and walks_inline(caps)
    main = defines_for(problem.dtype, out, sg_mode, sg_size, reqd, lanes, split, 0,
                       **({"SCAN_WALK_INLINE": 1} if walk_inline else {}))
    # PHASE 4 of this plan's macros, but one lane and no sub-groups: its walk uses no
    # collectives, and a required width only costs there (Intel's CPU runtime vectorises the
    # one-row walk as wide as the width asks: 70374 instructions at 64 on an AVX2 host, whose
    # link then failed on a 64-wide ldexp, which frexp_walk.h no longer calls)
    walk_defines = lambda **more: _scan_defines(  # noqa: E731
        caps, problem.op, acc, problem.dtype, out, wg, "local", None, "none", 1, items, split, 4,
        **big_in_walk, **more)
    if split == 1:
        passes = (launch(main, "input", "output", problem.rows, k, k, lanes, 1,
                         WALK_INLINE_TASKS if walk_inline else None),)
        if rescue and not walk_inline:
            passes += _walk_passes(caps, problem, wg, walk_defines)
    else:
        totals = defines_for(problem.dtype, acc, sg_mode, sg_size, reqd, lanes, split, 1)
        # the (rows, split) totals are short rows: one work-item each, no collectives; a
        # flagged row is walked whole (PHASE 4), so their scan walks nothing itself
        carries = _scan_defines(caps, problem.op, acc, acc, acc, wg, "local", None, "none", 1, items, 1, 0,
                                SCAN_RESCUE=0)
        passes = (launch(totals, "input", "partials", problem.rows, k, chunk, lanes, split),
                  launch(carries, "partials", "carries", problem.rows, split, split, 1, 1),
                  launch(main, "input", "output", problem.rows, k, chunk, lanes, split))
        if rescue:
            passes += _walk_passes(caps, problem, wg, walk_defines)
    return RowPlan(op=problem.op, cache="none", sg_mode=sg_mode, sg_size=sg_size, reqd_sg=reqd, wg_size=wg,
                   lanes=lanes, nper=items, local_len=1, local_mem_bytes=local_bytes, acc_dtype=acc, out_dtype=out,
                   kernel_file=kernel_file, entry=entry, defines=main[0], options=main[1],
                   global_size=passes[0 if split == 1 else 2].global_size, local_size=wg,
                   scalars=(("n_rows", "u64", problem.rows), ("row_len", "u64", k), ("chunk_len", "u64", chunk)),
                   split=split, passes=passes)


def walks_inline(caps: DeviceCaps) -> bool:
    """Whether a rescued whole-row scan's teams walk their flagged rows themselves (row_scan.cl
    SCAN_WALK_INLINE: one bit a task, at most WALK_INLINE_TASKS tasks a team) in place of a
    PHASE 4 launch: on GPUs. CPUs keep PHASE 4: their one-lane scans look for big inputs in
    the walk (SCAN_BIG_IN_WALK), and llvmpipe counts a walk against its loop limit."""
    return caps.device_type != "cpu" and not llvmpipe_loop_limited(caps)


def _walk_passes(caps: DeviceCaps, problem: RowProblem, wg: int, defines) -> tuple[RowPass, ...]:
    """PHASE 4: the rows a scan flagged, walked in row order (one work-item a row); on
    llvmpipe in launches of WALK_SEG_LLVMPIPE elements, the walk's state kept between them.
    ``defines(**more)``: the pass's (-D pairs, options) with ``more`` macros."""
    k = problem.row_len
    if llvmpipe_loop_limited(caps):  # one row a work-item, long rows in segments
        seg = WALK_SEG_LLVMPIPE if k > WALK_SEG_LLVMPIPE else 0
        pairs, options = defines(SCAN_WALK_ROWS=1, **({"SCAN_WALK_SEG": seg} if seg else {}))
        groups = _trip_groups(caps, _ceil_div(problem.rows, wg), problem.rows, wg, _ceil_div(seg or k, 32) + 4,
                              f"{problem.op} walk of rows of {k}")
    else:  # 16 rows' flags a work-item (row_scan.cl SCAN_WALK_ROWS)
        seg = 0
        pairs, options = defines()
        groups = _ceil_div(_ceil_div(problem.rows, 16), wg)
    return tuple(RowPass(options=options, global_size=groups * wg, local_size=wg, reads="input", writes="output",
                         n_rows=problem.rows, row_len=k, chunk_len=first, defines=pairs)
                 for first in range(0, k, seg or k))


# row_scan.cl CPU_OWN_EXP (scan_own_exp) on softmax's list (PoCL) and on rusticl's llvmpipe,
# whose logcumsumexp lanes ran 1.5-1.8x as fast with the flag forced on (float32, whole rows
# 0.24-0.51 -> 0.55-0.86 GB/s, 1 x 4000000 0.35-0.39 -> 0.46-0.59;
# benchmarks/logcumsumexp_pocl_vec_2026-11-29/ab_rusticl_forced.txt). Intel's runtime keeps
# its built-ins: it vectorises exp and log across work-items itself (13-35 % slower forced).
SCAN_OWN_EXP_IMPLEMENTATIONS = CPU_OWN_EXP_IMPLEMENTATIONS + ("rusticl",)


def scan_own_exp(caps: DeviceCaps, op: str, acc: str, items: int) -> bool:
    """row_scan.cl CPU_OWN_EXP: logcumsumexp's float32 lanes of a CPU plan take cpu_vec.h's
    cpu_exp and cpu_log (operators, ITEMS-wide vectors) in place of the exp and log built-ins on
    the implementations of SCAN_OWN_EXP_IMPLEMENTATIONS above (PoCL 3.0 from pip calls them
    out of line, one element at a time; llvmpipe gains as much). Not CUDA (cpu_vec.h's OpenCL
    vectors), not float64 (cpu_exp / cpu_log are float's), not ITEMS 1 (no vector)."""
    return (op == "logcumsumexp" and acc == "float32" and items > 1 and caps.backend == "opencl"
            and caps.device_type == "cpu" and caps.implementation in SCAN_OWN_EXP_IMPLEMENTATIONS)


def _scan_defines(caps: DeviceCaps, op: str, acc: str, in_dtype: str, out_dtype: str, wg: int, mode: str,
                  sg_size: int | None, reqd: str, lanes: int, items: int, split: int, phase: int,
                  **more) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(-D pairs, build options) of one row_scan.cl launch; ``more``: macros only some phases
    take (the look-back's ROUNDS and MIN_BLOCKS)."""
    d = {"IN_T": CL_TYPE[in_dtype], "OUT_T": CL_TYPE[out_dtype], "ACC_T": CL_TYPE[acc],
         "ACC_BYTES": np.dtype(acc).itemsize, "ACC_IS_FLOAT": int(acc.startswith("float")),
         "IN_HALF": int(in_dtype == "float16"), "OUT_HALF": int(out_dtype == "float16"), "WG_SIZE": wg,
         "IN_BOOL": int(in_dtype == "bool"),
         "LANES": lanes, "SG_MODE": _SG_MODE_MACRO[mode], "SG_SIZE": sg_size or 0, "REQD_SG": _REQD_MACRO[reqd],
         "ITEMS": items, "SPLIT": split, "PHASE": phase, **FAMILIES[op][2], **more}
    if scan_own_exp(caps, op, acc, items):
        d["CPU_OWN_EXP"] = 1
    elif _scan_own_access(caps):
        d["SCAN_OWN_ACCESS"] = 1  # row_scan.cl: element loops for the lanes' accesses
    if _scan_unrolled(caps, op):
        d["SCAN_UNROLL"] = 1  # row_scan.cl: a lane's loops unrolled by pragma
    if lanes == 1 and reqd == "none" and _intel_scalar_scan(caps, op, None):
        # row_scan.cl: no vectorising across work-items. Not beside a required sub-group size:
        # the runtime refuses the pair ("Conflicting CL_CONFIG_CPU_VECTORIZER_MODE,
        # intel_vec_len_hint and intel_reqd_sub_group_size"), which forced sub-group plans ask for
        d["INTEL_VEC_LEN_1"] = 1
    pairs = tuple(sorted((name, str(value)) for name, value in d.items()))
    return pairs, build_options(pairs, caps.cl_std if mode != "local" else None)


def _scan_own_access(caps: DeviceCaps) -> bool:
    """row_scan.cl SCAN_OWN_ACCESS: CPU plans on SCAN_OWN_ACCESS_IMPLEMENTATIONS (where
    CPU_OWN_EXP does not spell the accesses already: _scan_defines)."""
    return (caps.backend == "opencl" and caps.device_type == "cpu"
            and caps.implementation in SCAN_OWN_ACCESS_IMPLEMENTATIONS)


def _scan_unrolled(caps: DeviceCaps, op: str) -> bool:
    """row_scan.cl SCAN_UNROLL, lanes of SCAN_UNROLL_ITEMS_BYTES at most: SCAN_OWN_ACCESS's
    sums and products (SCAN_UNROLL_OPS; none of them takes CPU_OWN_EXP)."""
    return op in SCAN_UNROLL_OPS and _scan_own_access(caps)


def _intel_scalar_scan(caps: DeviceCaps, op: str, force: RowForce | None) -> bool:
    """Intel's CPU runtime, a sum or product (INTEL_SCAN_VEC_LEN_1) whose one-lane scan may ask
    not to be vectorised across work-items (row_scan.cl INTEL_VEC_LEN_1): the extension listed,
    no sub-group forced (``force`` None: the defines' check, which sees the plan's mode), no
    vectoriser width set by the caller. Such a plan takes no sub-group mode: a lane alone has no
    collective, and a required sub-group size had also set the vectoriser's width."""
    return (caps.backend == "opencl" and caps.device_type == "cpu" and caps.implementation == "intel"
            and op in INTEL_SCAN_VEC_LEN_1 and caps.has("cl_intel_vec_len_hint")
            and (force is None or (force.sg_mode is None and force.sg_size is None))
            and not _intel_vectorizer_width_set())


def _intel_vectorizer_width_set() -> bool:
    """Whether the caller set Intel's CL_CONFIG_CPU_VECTORIZER_MODE to a width (4, 8, 16): its
    CPU runtime then refuses a kernel with intel_vec_len_hint (the build fails); 0 (its
    heuristic) and 1 (no vectoriser) build."""
    return os.environ.get("CL_CONFIG_CPU_VECTORIZER_MODE", "").strip() not in ("", "0", "1")


def _lookback_ok(caps: DeviceCaps) -> bool:
    """The look-back runs here: CUDA (blocks that wait on earlier blocks progress) on sm_70+."""
    if caps.backend != "cuda":
        return False
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes
    return device_extras(caps).get("cc", 0) >= 70


def _lookback_rounds(wg: int, sg_size: int, items: int, acc_bytes: int) -> int:
    """Runs of 16 bytes per thread in a look-back tile: LOOKBACK_ACC_BYTES of accumulators, and
    at most sg_size runs per tile (one sub-group scans their totals)."""
    return max(1, min(LOOKBACK_ACC_BYTES // (items * acc_bytes), sg_size // (wg // sg_size)))


def _lookback_shape(caps: DeviceCaps, problem: RowProblem, force: RowForce, acc: str, sg_size: int,
                    items: int) -> tuple[int, float | None, int, bool]:
    """(threads per block, share of an SM's threads or None, runs per thread, LB_AHEAD) of a
    look-back plan. LB_AHEAD: float accumulators of 16-byte runs on sm_80+ (cp.async), blocks
    of two sub-groups or more whose two copies of a tile (and its runs' totals) fit shared
    memory, rows of at least two tiles per SM; its own shapes (LOOKBACK_AHEAD), else
    LOOKBACK_FLOAT's."""
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes
    size = np.dtype(problem.dtype).itemsize
    acc_bytes = np.dtype(acc).itemsize
    ahead_shape = LOOKBACK_AHEAD.get(size) if acc == "float32" else None
    if ahead_shape is not None and items * size == 16 and device_extras(caps).get("cc", 0) >= 80:
        wg, share, rounds = ahead_shape
        if force.wg_size is not None:
            wg, share = force.wg_size, None
        wg = min(wg, caps.max_work_group_size)
        if wg >= 2 * sg_size and wg % sg_size == 0:
            rounds = max(1, min(rounds, sg_size // (wg // sg_size)))  # one sub-group scans the run totals
            tile = rounds * wg * items
            tiles = problem.rows * _ceil_div(problem.row_len, tile)
            # two copies of a tile and its runs' totals, beside 1 KB of the rest
            local = 2 * tile * size + tile // items * acc_bytes + 1024
            if local <= caps.local_mem_size and tiles >= 2 * max(1, caps.compute_units):
                return wg, share, rounds, True
    wg, share = LOOKBACK_WG, None
    if acc == "float32" and size in LOOKBACK_FLOAT:
        wg, share = LOOKBACK_FLOAT[size]
    if force.wg_size is not None:
        wg, share = force.wg_size, None
    wg = min(wg, caps.max_work_group_size)
    return wg, share, _lookback_rounds(wg, sg_size, items, acc_bytes), False


def _plan_lookback(caps: DeviceCaps, problem: RowProblem, force: RowForce, sg_mode: str, sg_size: int,
                   reqd: str, items: int) -> RowPlan:
    """The look-back scan (row_scan.cl PHASE 2) after a pass that clears its flags (PHASE 3)."""
    acc = acc_dtype_of(problem.op, problem.dtype)
    out = out_dtype_of(problem.op, problem.dtype)
    acc_bytes = np.dtype(acc).itemsize
    wg, share, rounds, ahead = _lookback_shape(caps, problem, force, acc, sg_size, items)
    batch = ahead and problem.op in LOOKBACK_PREFIX_BATCH_OPS and force.sg_mode is None
    if batch:
        sg_mode = _shuffle_mode(caps) or sg_mode
    if wg % sg_size:
        raise UnsupportedOnDevice(f"the look-back needs whole sub-groups of {sg_size} in at most "
                                  f"{caps.max_work_group_size} threads: wg_size={wg}")
    min_blocks = 1 if share is None else _resident_blocks(caps, share, wg)
    tile = rounds * wg * items
    k = problem.row_len
    words, _ = lookback_workspace(problem.rows, k, tile, acc_bytes)
    kernel_file, entry, _ = FAMILIES[problem.op]
    tiles = problem.rows * _ceil_div(k, tile)
    # the segments' totals (with LB_AHEAD two buffers and a scratch), the tile's prefix and
    # total, the ticket; LB_AHEAD's two copies of a tile and its runs' totals
    segs = rounds * wg // sg_size
    local_bytes = (segs * (3 if ahead else 1) + 2) * acc_bytes + 4 + (
        2 * tile * np.dtype(problem.dtype).itemsize + segs * sg_size * acc_bytes if ahead else 16 + acc_bytes)
    extra = {"MIN_BLOCKS": min_blocks} if min_blocks > 1 else {}
    if ahead:
        extra["LB_AHEAD"] = 1
    if batch:
        extra["LB_PREFIX_BATCH"] = 1
    common = (caps, problem.op, acc, problem.dtype, out, wg, sg_mode, sg_size, reqd, sg_size, items, 1)
    clear = _scan_defines(*common, 3, ROUNDS=rounds)
    main = _scan_defines(*common, 2, ROUNDS=rounds, **extra)
    # LB_AHEAD blocks stay and take tile after tile: as many as the SMs hold at once (a
    # forced wg_size has no share: as many as the SM's threads and shared memory allow)
    per_sm = min_blocks
    if ahead and share is None:
        from .backends.cuda.probe import device_extras  # pure: reads caps.notes
        extras = device_extras(caps)
        per_sm = max(1, min(extras["threads_per_sm"] // wg, extras["smem_per_sm"] // (local_bytes + 1024)))
    blocks = min(tiles, max(1, caps.compute_units) * per_sm) if ahead else tiles
    clear_groups = max(1, min(_ceil_div(words, wg), 4 * max(1, caps.compute_units)))
    passes = (RowPass(options=clear[1], global_size=clear_groups * wg, local_size=wg, reads="partials",
                      writes="partials", n_rows=1, row_len=words, chunk_len=words, defines=clear[0]),
              RowPass(options=main[1], global_size=blocks * wg, local_size=wg, reads="input", writes="output",
                      n_rows=problem.rows, row_len=k, chunk_len=tile, defines=main[0]))
    if scan_rescues(problem.op, problem.dtype):
        passes += _walk_passes(caps, problem, wg, lambda **more: _scan_defines(*common, 4, LB_FLAGS=1, **more))
    return RowPlan(op=problem.op, cache="none", sg_mode=sg_mode, sg_size=sg_size, reqd_sg=reqd, wg_size=wg,
                   lanes=sg_size, nper=items, local_len=1, local_mem_bytes=local_bytes, acc_dtype=acc,
                   out_dtype=out, kernel_file=kernel_file, entry=entry, defines=main[0], options=main[1],
                   global_size=passes[1].global_size, local_size=wg,
                   scalars=(("n_rows", "u64", problem.rows), ("row_len", "u64", k), ("chunk_len", "u64", tile)),
                   split=1, passes=passes, lookback_tile=tile)
