"""Planner for the row operations (softmax, norms, absmax-scale/quantize): pure, no device.

A row op reads a row, reduces it to one or two statistics, and (except ``moments``) writes
the row back transformed. Teams of ``lanes`` work-items own one row each. Where the row
waits between the reduce and the write is the plan's main decision:

* ``registers`` - each lane keeps ``nper`` elements in a private array: the row is read
  once. Bounded by a per-lane register budget (Mali's register file is small).
* ``local`` - each team keeps its row in local memory: read once. Bounded by a share of
  the device's local memory (32 KiB on Mali and Adreno). Only GPUs pick it by default: a
  CPU's "local memory" is ordinary memory and its caches already keep the row.
* ``none`` - every pass reads the row again (softmax: three passes; norms and scales: two).

Few long rows are split (``split`` chunks per row, two launches): the first writes each
chunk's partial statistics, the second folds a row's partials and writes the chunk. On Mesa's
llvmpipe (rusticl's CPU device) splits and group counts also keep every work-item under the
driver's loop-trip limit (see ``LLVMPIPE_LOOP_LIMIT``).

Sub-group mode and width follow :mod:`clreduce.plan`'s rules (its helpers are reused).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .caps import DeviceCaps
from .kernels import build_options
from .ops import CL_TYPE
from .plan import (_REQD_MACRO, SG_MODES, Force, _SG_MODE_MACRO, UnsupportedOnDevice, _ceil_div, _choose_sg_mode,
                   _choose_sg_size, _choose_wg, _groups, _pow2_floor, _shuffle_mode, llvmpipe_loop_limited)

CACHES = ("registers", "local", "none")
_CACHE_MACRO = {"registers": 0, "local": 1, "none": 2}

# op -> (kernel file, entry, extra defines). The extras name the variant inside the family.
FAMILIES = {
    "softmax": ("softmax.cl", "softmax_rows", {"LOG": 0}),
    "log_softmax": ("softmax.cl", "softmax_rows", {"LOG": 1}),
    "rms_norm": ("row_norm.cl", "norm_rows", {"NORM": 0}),
    "layer_norm": ("row_norm.cl", "norm_rows", {"NORM": 1}),
    "moments": ("row_norm.cl", "norm_rows", {"NORM": 2}),
    "absmax_scale": ("row_scale.cl", "scale_rows", {"QUANT": 0}),
    "quantize_int8": ("row_scale.cl", "scale_rows", {"QUANT": 1}),
    "cumsum": ("row_scan.cl", "scan_rows", {"SCAN": 0}),
    "cumprod": ("row_scan.cl", "scan_rows", {"SCAN": 1}),
    "logcumsumexp": ("row_scan.cl", "scan_rows", {"SCAN": 2}),
}
SCAN_OPS = ("cumsum", "cumprod", "logcumsumexp")
INT_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
# Ops that write no row (statistics only): nothing to cache.
STATS_ONLY = ("moments",)
FLOAT_DTYPES = ("float16", "float32", "float64")

# Elements per lane a private array may hold. Mali Bifrost/Valhall give a thread 64
# 32-bit registers and halve occupancy above 32 in use: keep the cache to 16 there.
REG_FLOATS = 32
REG_FLOATS_ARM = 16
# CPUs: private arrays live on the stack (L1/L2); PoCL keeps a whole group's private arrays on
# one thread's stack (it crashed at 32 KB x 1024 work-items), so a group's cache is capped.
# Rows up to 4096 float32 are cached whole by one work-item (groups of 16: 256 KiB): read once,
# exp'd once in VEC-wide calls (softmax.cl exp_run), where the uncached walk read them twice
# and ran an exp per element -- float32 rows of 1000 / 4096 on this AMD host, device arrays,
# noisy 2-core VM: softmax PoCL 0.22 -> 1.0 GB/s, Intel 0.6 -> 1.2-1.6; rms_norm PoCL 0.7-1.0
# -> 1.4-2.1 (the limit had been 128 floats, 64 KiB a group).
REG_FLOATS_CPU = 4096
CPU_GROUP_PRIVATE_BYTES = 256 << 10
# Share of local memory a row cache may take: half, so two groups stay resident per core;
# at most 32 KiB (Mali's and Adreno's whole local memory; on Mali it is system memory).
LOCAL_SHARE = 2
LOCAL_CAP = 32 << 10
# Local row buffers are sized in steps of this many elements, so near row lengths share
# one program.
LOCAL_STEP = 256
# Short rows: about this many elements per lane before a team is widened.
PER_LANE = 4
# GPUs, register-cached softmax and norms: runs of VEC consecutive elements, VEC_BYTES per
# load, and a team of one lane per run up to the work-group (float16 rows of 128 on an H100:
# 16 lanes of one 16-byte load each, two rows per warp). Element loads at PER_LANE moved 64
# bytes per warp load of half and left the H100 at a quarter of its bandwidth (issue 10).
VEC_FAMILIES = ("softmax.cl", "row_norm.cl")
VEC_BYTES = 16
VEC_MAX = 16
# layer_norm takes at least this many elements per lane (its second team reduce favours
# fewer lanes): float32 rows of 128 run 16 lanes of 8, not 32 of 4. It had been two runs per
# lane, 8 lanes of 16 halves for float16 rows of 128; with registers capped (CUDA_RESIDENT
# below) 16 lanes of 8 halves ran at 2493 GB/s on an H100 against 2414 for 8 lanes of 16.
# And its team stays in one sub-group where the row fits the registers of one (across
# sub-groups each of its two team reduces is a barrier round trip through local memory):
# float16 8192x1000 ran at 1653-1761 GB/s with 64 lanes, 1949-1969 with 32 (H100).
MIN_ELEMS_PER_LANE = {"layer_norm": 8}
# CUDA GPUs whose DRAM outruns their SMs keep two runs a lane in flight, for rows of 4 runs
# or more (a row of two 16-byte runs ran 12-27 % slower in one lane than in two) and launches
# that still fill the GPU's threads CUDA_TWO_RUNS_MIN_WAVES times. On an H200 (4.8 TB/s, 36
# GB/s an SM) one run a lane left register rows at 80-95 % of copy. Public call on torch
# tensors, main and this rule alternating twice, GB/s
# (benchmarks/rowops_h200_2026-11-28/ab_two_runs/): float32 rms_norm 1048576x32 3514 -> 3989-4038,
# 442368x128 3779-3782 -> 3998-4046, 16777216x16 3769-3800 -> 4054-4105; float16 layer_norm
# 442368x128 3245-3250 -> 3691-3697, 4194304x64 3470-3496 -> 3990-4049; softmax 1-3 % (float16
# 442368x128 3763-3794 -> 3884-3894); float32 layer_norm (two runs already) level. float16
# softmax 8192x1000 (16 MB: 1.9 waves with two runs a lane) fell 2430-2450 -> 1695-1973, hence
# the waves; float32 there (3.8 waves) rose 3152-3258 -> 3423-3452. The H100 (3.35 TB/s, 25
# GB/s an SM) keeps one: float16 layer_norm 442368x128 ran 2493 GB/s with one run a lane, 2414
# with two (MIN_ELEMS_PER_LANE above).
CUDA_TWO_RUNS_GBPS_PER_SM = 30
CUDA_TWO_RUNS_MIN_WAVES = 2
# ... and there float16 layer_norm rows of at most this many runs store each run with one
# 16-byte instruction (row_norm.cl ROW_WIDE_STORES; rms_norm and softmax always do). H200,
# public call on torch tensors, GB/s, main / wide stores alternating twice
# (benchmarks/rowops_h200_wide_stores_2026-11-28/): 16777216x16 3589, 3551 / 3672, 3640;
# 1048576x32 3358, 3359 / 3452, 3441; rows of 64 and 128 level (4050, 4018 / 4034, 4031;
# 3698, 3683 / 3697, 3699), float32 mixed (-3.5 to +1.3 %). The H100 keeps VSTORE_ARRAY:
# its float16 layer_norm 648720x128 lost 6 % with the wide stores.
CUDA_WIDE_STORE_LAYER_NORM_RUNS = 4
ONE_SUBGROUP_TEAMS = ("layer_norm",)
# CUDA, float16 softmax and norm rows cached in registers: __launch_bounds__(wg, MIN_BLOCKS)
# makes nvcc fit each thread in regs_per_sm / (MIN_BLOCKS * wg) registers, so that share of
# the SM's threads stays resident. Left alone nvcc gave float16 layer_norm rows of 128 64
# registers (half the H100's threads resident). Resident share asked for, by NPER (elements
# cached per lane): <= 8 all; <= 16 all for softmax and rms_norm, three quarters for
# layer_norm (at 32 registers its two passes over the registers spilled: 2414 -> 1970 GB/s);
# longer, no cap (not measured). float32 rows, whose 16-byte loads carry half as many
# elements, gained nothing (within 2 % either way), so they keep nvcc's choice. H100, public
# call on torch tensors, GB/s before -> after, two alternating runs
# (benchmarks/rowops_occupancy_h100_2026-11-25): float16 65536x4096 softmax 2350 -> 2853,
# rms_norm 2496 -> 2823, layer_norm 2395 -> 2505; 648720x128 softmax 2754 -> 2853,
# log_softmax 2567 -> 2827, rms_norm 2790 -> 2859, layer_norm 2416 -> 2546.
# rms_norm joined layer_norm at three quarters when the runs' loads went out together
# (row_common.h, load_runs: two runs' words live at once): at 32 registers it spilled, float16
# 65536 x 4096 2468-2473 -> 2142-2183 GB/s; at 40 (MIN_BLOCKS 6) 2867.
CUDA_RESIDENT = ((8, {None: 1.0}), (16, {"layer_norm": 0.75, "rms_norm": 0.75, None: 1.0}))
# CPUs (Intel's runtime, PoCL): softmax / norm rows that fit one work-item's private array
# run one row per work-item in groups of CPU_ROW_WG, read in runs of CPU_VEC_BYTES. The team
# plans (Intel: 4 lanes a row in groups of 256; PoCL: a row per work-item in groups of 256,
# whose private budget then left rows of 128 uncached) were 1.3-2x slower on 65536 x 128
# float32 (interleaved A/B, README).
CPU_ROW_WG = 16
# softmax rows too long for CPU register runs walk three times too (softmax.cl CPU_PASSES), a
# task a work-group of one: with two rows a core (the row split's want of tasks) a row a task,
# with fewer split in chunks of at most CPU_PASSES_CHUNK elements (256 KB of float32: a chunk's
# two walks, max then sum, find it in the core's L2)
CPU_PASSES_CHUNK = 1 << 16
# ... and the norms (row_norm.cl CPU_PASSES: the statistics, then the write, each a walk in
# vectors; moments the first alone). float32 device arrays, ms a call, plan before / after (one
# trip a work-item included), alternating rounds on the 2-core AMD EPYC VM
# (benchmarks/norm_cpu_passes_2026-11-28/ab_norm_f32.txt): pip's PoCL rms_norm 62500 x 128
# 8.1-10.7 / 4.2-4.5, 250000 x 32 28.7-34.3 / 7.8-8.5, layer_norm 8000 x 1000 17.9-18.4 / 3.9-4.0,
# moments 8000 x 1000 11.4-12.6 / 2.3-2.5; Debian's PoCL and Intel alike.
CPU_PASSES_FAMILIES = ("softmax.cl", "row_norm.cl")
# CUDA rows that walk back (cuda_walk_back: read twice from memory, their rows in flight
# passing the L2) also stream their write walk (row_common.h STREAM_WRITE) in these families:
# H200 softmax / log_softmax float32 4096 x 65536 +12-13 %, float16 level; norms not measured
CUDA_STREAM_WRITE_FAMILIES = ("softmax.cl",)
# CPU_PASSES softmax takes softmax.cl's cpu_exp (operators) in place of the exp built-in on
# these implementations: PoCL 3.0 from pip calls exp out of line (README)
CPU_OWN_EXP_IMPLEMENTATIONS = ("pocl",)
# float16 softmax rows of at most CPU_HALF_TERMS_MAX elements on these implementations keep
# their exp terms as floats in a private array between the sum and the write (softmax.cl
# CPU_HALF_TERMS; the array's length the row's, to a power of two, at least 256): one exp an
# element where the write had taken each again: 1.2-2.1x a call on both PoCLs and Intel's
# runtime, device arrays, rows of 128 to 65536 (benchmarks/softmax_cpu_half_terms_2026-11-29)
CPU_HALF_TERMS_MAX = 65536
CPU_HALF_TERMS_IMPLEMENTATIONS = ("pocl", "intel")
# CPU_PASSES rows up to this many bytes take one trip a work-item (_cpu_one_trip)
CPU_ONE_TRIP_ROW_BYTES = 4096
CPU_VEC_BYTES = 64
# ... and absmax_scale on Intel's runtime (its register runs are the same): 1.9-2.2 -> 2.5-2.9
# GB/s on float32 rows of 128 / 1000 (interleaved runs, loaded host); PoCL lost ~10 % that
# way (1.57-1.76 -> 1.36-1.58) and keeps its plan. Not quantize_int8: its rows of 1000 lost
# 15 % on Intel's runtime (the int8 stores), PoCL no change either way.
CPU_ROW_OPS = {"intel": ("absmax_scale",)}
# ... and the other scale rows short enough for registers (row_scale.cl: absmax_scale but
# where CPU_ROW_OPS caches it, quantize_int8) are read twice from memory on CPU runtimes that
# vectorise across work-items: the second read comes from the core's cache, and the register
# plan (a row, or a 4-lane team, per work-item, element by element) ran 1.2-4x slower. float32
# device arrays, ms a call, register plan / walk, three alternating rounds (2-core AMD EPYC VM,
# benchmarks/rowops_cpu_scale_walk_2026-11-28/ab_cache.txt): pip's PoCL quantize_int8
# 125000x128 193-211 / 52-57, 500000x32 226-239 / 68-74, 250000x64 217-248 / 61-74,
# absmax_scale 55-91 / 40-44, 89-125 / 89-102, 83-112 / 38-54; Debian's PoCL quantize 45-73 /
# 29-62, absmax 40-87 / 13-69; Intel quantize 52-79 / 33-62. Mixed, so kept (ab_walk_kept.txt,
# default / walk): Intel's absmax_scale register runs 22-29 / 42-44 at K = 32, 22-30 / 19-21 at
# K = 64; llvmpipe absmax_scale 97-99 / 158-190 at K = 32, though its other scale rows walked
# ran 1.5-1.7x faster: so llvmpipe walks them from the row lengths below.
CPU_WALKED_SCALE_OPS = ("absmax_scale", "quantize_int8")
# ... and on these implementations they take row_scale.cl's CPU_PASSES walks (_cpu_scale_passes)
CPU_SCALE_PASSES_IMPLEMENTATIONS = ("pocl",)
# llvmpipe (which takes no CPU register runs) walks a scale row of at least this many
# elements (ab_walk_kept.txt, register plan / walk, ms a call): quantize_int8 K = 32, 64, 128
# 236-269 / 157-168, 227-267 / 160-164, 256-262 / 159-162; absmax_scale K = 64 and 128
# 254-276 / 162-169, 244-253 / 144-158, but K = 32 97-99 / 158-190, so from 64.
LLVMPIPE_WALKED_SCALE_LEN = {"quantize_int8": 1, "absmax_scale": 64}
# Rows read from memory (cache "none", split rows) of softmax, norms and scales: runs of
# VEC_BYTES (GPUs) or CPU_VEC_BYTES (Intel's CPU runtime) after a scalar head up to an aligned address, no
# matter the row length (the kernels' LANE_WALK). Element loads had left long rows at the
# speed of scalar code. Not on llvmpipe: its loop limiter counts the inner loop of a run.
WALK_FAMILIES = ("softmax.cl", "row_norm.cl", "row_scale.cl")
# CUDA, whole rows too long to cache (cache "none", unsplit: read once for the statistics and
# again for the write): a block of 1024 threads a row instead of 256. Two such blocks fill an
# H100 SM, so ~264 rows are in flight: 34 MB of float16 rows of 65536, inside the 50 MB L2,
# and the second read comes from there. Forced shapes, one H100 (CUDA events, cupy input):
# float16 4096 x 65536 rms_norm 1944 -> 2746 GB/s, layer_norm 1925 -> 2546, softmax 1825 ->
# 1907; float32 (rows of 256 KB: 67 MB in flight) rms_norm +4.5 %, layer_norm +3.6 %, softmax
# -0.6 %. Split rows (64 x 4194304, 1 x 2^28) gained nothing from it and keep 256.
CUDA_UNCACHED_WG = 1024
CUDA_UNCACHED_OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm")
# ... and narrower blocks where a row has fewer runs: a block as wide as leaves each thread
# this many runs of a row (256 to 1024 threads). Forced shapes on one H100, public call, cupy
# input, GB/s (2026-11-27): float16 softmax 8192 x 32768 (4096 runs): 1024 threads 1609, 512
# 2197, 256 1756 (torch 2269); 16384 x 16384 (2048 runs): 256 2281, 512 1933. float16
# rms_norm 16384 x 16384: 256 2418, 512 2947; 8192 x 32768: 1024 2918, 512 2670. softmax's
# walk (an online max and an exp per element) wants 8 runs a thread, the norms' 4.
CUDA_UNCACHED_RUNS = {"softmax": 8, "log_softmax": 8, "rms_norm": 4, "layer_norm": 4}
# ... but float16 softmax rows no wider than 512 threads. The H200 (50 MB L2) ran float16 4096 x
# 65536 (8192 runs a row, so 1024 threads by the rule above) 23 % faster in blocks of 512: 528
# rows in flight pass the L2, so the write walks back and streams (cuda_walk_back,
# STREAM_WRITE), where 1024's 264 rows (34 MB) walk forward. Public call on torch tensors,
# GB/s, two rounds: softmax 2385-2391 -> 2927-2961, log_softmax 2424-2440 -> 2953-2998 (torch
# eager 2190-2231 / 2580-2587); 1024 threads walking back: level with forward; 256: 2503-2574
# (benchmarks/softmax_f16_long_rows_h200_2026-11-29/). Not re-measured on the H100.
CUDA_UNCACHED_HALF_SOFTMAX_WG = 512
# CUDA, float32 softmax rows too long for a block of 256 to cache in registers: a block of up
# to 1024 caches them (NPER 32 a thread), read once. Same runs: float32 softmax 16384 x 16384
# 1779 -> 2959 GB/s (512 threads; read twice by 1024: 1779, by 512: 2406; torch 2575),
# 8192 x 32768 2210 -> 2957 (1024 threads; torch 1604). float16 softmax and the norms were no
# faster that way (float16 softmax 8192 x 32768 1581, rms_norm float32 +3 %) until float16 runs'
# loads went out together (below). The norms since (H100, public call on torch tensors, read
# twice -> in registers, two runs): float32 rms_norm 16384 x 16384 2932-2942 -> 2934-2974,
# 8192 x 32768 2786-2822 -> 2957-2966; layer_norm 2545-2578 -> 2922-2932, 2602-2606 ->
# 2794-2808; float16 rms_norm 8192 x 32768 (64 a thread) 2810-2826 -> 2944-2950, layer_norm
# 2522-2523 -> 2601-2641.
CUDA_WIDE_REGISTER_OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm")
# ... but float16 norm rows of 32 a thread in groups of 512 (16384) stay read twice: rms_norm
# 2912-2933 -> 2562-2608, layer_norm 2809-2811 -> 2064-2084 (level to +3 % with MIN_BLOCKS 2)
CUDA_WIDE_ONLY_PAST_BUDGET = {"float16": ("rms_norm", "layer_norm")}
# ... and float16 softmax rows in groups of up to 512, 32 elements a thread or, for rows longer
# than 512 x 32, up to 64, since their runs' loads go out together (row_common.h, load_runs).
# One H100, public call on torch tensors, GB/s: float16 softmax 16384 x 16384 2209-2250 ->
# 2918-2988 (512 threads; torch 2199), 8192 x 32768 2321-2382 (read twice) -> 2725-2733 (512
# threads of 64; 1024 of 32: 2378-2384, level with reading twice).
# (widest group, elements a thread may cache in it) by dtype:
CUDA_WIDE_REGISTER_ROWS = {"float32": (1024, REG_FLOATS), "float16": (512, 2 * REG_FLOATS)}
# CUDA, whole rows read twice from memory (cache "none", unsplit): the write walk goes last run
# to first (row_common.h, WALK_BACK) where the rows in flight (resident groups x row bytes) pass
# the L2, so that it starts on the lines the statistics walk read last. Where they fit, the
# forward walk already hits and the backward one lost 1-3 %. One H100 (50 MB L2), public call on
# torch tensors, GB/s, two runs each (benchmarks/rowops_walk_back_h100_2026-11-27): float32
# 4096 x 65536 (1024 threads, 264 rows of 256 KB: 69 MB) softmax 1860-1866 -> 1948-1957,
# rms_norm 2037-2054 -> 2138-2160, layer_norm 2005-2009 -> 2173-2185; rows of 262144 +2-5 %
# but float32 softmax (-1 %); 34 MB in flight lost:
# float16 softmax 8192 x 32768 2229 -> 2152-2173, float32 rms_norm 8192 x 32768 2788-2823 ->
# 2701-2735, float16 4096 x 65536 rms/layer_norm -1-2 %. Split rows (their second walk is another
# launch: little of a chunk is left in L2, whatever the order) gained nothing clear.
# Families whose runs (WALK_RUNS) have a scalar form for the CUDA dialect (no vector math):
# one max, rescale and compensated add per run of 16 bytes instead of per element
CUDA_WALK_RUNS = ("softmax.cl", "row_norm.cl")
# GPUs: work-groups per compute unit before the grid stride takes over (plan.py's 64 for
# the reductions).
GPU_GROUPS_PER_CU = 64
# ... except rows in registers in launches of at least CUDA_ONE_TRIP_MIN_BYTES on fast-memory
# CUDA GPUs (CUDA_TWO_RUNS_GBPS_PER_SM): float32 softmax / rms_norm / layer_norm, and float16
# rms_norm / softmax lanes of two runs or more (CUDA_ONE_TRIP_HALF_OPS) take a group for every
# TEAMS rows, each team one trip. H200, public call on torch tensors, GB/s, capped / one trip
# (benchmarks/rowops_h200_one_trip_2026-11-28/; the sweep's two rounds alike within 0.5 %):
# float32 16777216x16 layer_norm 4023-4031 / 4133-4135, rms_norm 4102-4112 / 4191, softmax
# 4069-4075 / 4237-4242; 4194304x64 3952-3960 / 4139-4143, 3995-3996 / 4118, 3971-3975 /
# 4118-4127; the rule against main, 65536x4096 (a group a row) 3965-3967 / 4081-4107,
# 3930 / 4088-4127, 3906-3963 / 4084-4123. Smaller launches lost (1048576x32, 128 MB: -3 to
# +0.5 %) or stayed level (442368x128, 216 MB). float16 rows lost where a lane holds one run
# (rows of 16: softmax 3996-4028 -> 3926, rms_norm 4003-4023 -> 3955) and in layer_norm
# (4194304x64 4021-4038 -> 3748-3750), and won in rms_norm and softmax lanes of two runs: the
# rule against main, 4194304x64 4031-4036 / 4218-4222 and 4009-4047 / 4163-4166, 65536x4096
# 3921-3926 / 4061 and 3876-3884 / 3959-3981.
CUDA_ONE_TRIP_OPS = ("softmax", "rms_norm", "layer_norm")
CUDA_ONE_TRIP_MIN_BYTES = 512 << 20
CUDA_ONE_TRIP_HALF_OPS = ("softmax", "rms_norm")
# Few long rows: split a row when it is this long and the rows alone give fewer tasks than
# the device wants, into chunks of at least ROW_SPLIT_MIN_CHUNK (a multiple of
# ROW_SPLIT_ALIGN elements, so chunks start on 256-byte boundaries for float32).
ROW_SPLIT_MIN_ROW = 1 << 15
ROW_SPLIT_MIN_CHUNK = 1 << 13
ROW_SPLIT_ALIGN = 64
# Loops over the row a whole-row launch runs (cached: over NPER registers or local memory):
# softmax max, exp-sum and write (uncached: max and sum in one loop, then the write); norms
# and scales statistics and write; moments statistics only.
_PASSES = {"softmax": 3, "log_softmax": 3, "rms_norm": 2, "layer_norm": 2, "moments": 1,
           "absmax_scale": 2, "quantize_int8": 2}

# Mesa's llvmpipe (the CPU device behind rusticl; seen on Mesa 22.3.6) compiles every kernel
# loop with one shared trip counter per work-item batch (gallivm's loop limiter,
# LP_MAX_TGSI_LOOP_ITERATIONS = 65535, "shared between every loop in a shader"): once the
# back-edges of all loops of a launch's work-item add up to 65535, every loop still running
# exits after its current trip, silently. softmax of a (2, 100000) float32 array with one
# lane per row gave [1, 0, 0, ...]: the max loop used up the counter, the sum and the write
# loops ran once. Plans for llvmpipe keep an upper bound of each work-item's back-edges
# below half the limit (margin for loops inside built-ins): long rows are split, more groups
# shorten the grid stride. Main's reductions stay under it by their vector loads and splits.
LLVMPIPE_LOOP_LIMIT = 65535
LLVMPIPE_TRIP_BUDGET = LLVMPIPE_LOOP_LIMIT // 2


def row_trips(op: str, cache: str, lanes: int, nper: int, chunk: int, split: int, phase: int,
              sg_size: int | None) -> int:
    """Upper bound on the loop back-edges one work-item runs for one task of a row op.

    ``phase`` 0 is a whole row, 1 a chunk's partials, 2 a chunk's write from the partials.
    """
    per_pass = nper if cache == "registers" else _ceil_div(chunk, lanes)
    passes = _PASSES[op] if phase == 0 else (1 if phase == 1 or op != "moments" else 0)
    if phase == 0 and cache == "none" and op in ("softmax", "log_softmax"):
        passes = 2  # max and sum in one read (an online max), then the write
    reduces = 3
    if op in ("layer_norm", "moments") and cache != "registers" and phase != 2:
        passes += 1  # row_norm.cl RESCUE: the statistics again where the shifted sums lost them
        reduces = 5
    reduce_trips = lanes.bit_length() + (lanes // sg_size if sg_size else 0) + 1
    fold = 2 * _ceil_div(split, lanes) if phase == 2 else 0
    return passes * per_pass + reduces * reduce_trips + fold + 1


def _trip_groups(caps: DeviceCaps, groups: int, tasks: int, teams: int, trips: int, what: str) -> int:
    """``groups``, raised on llvmpipe so a work-item's grid-stride trips fit the budget."""
    if not llvmpipe_loop_limited(caps):
        return groups
    if trips > LLVMPIPE_TRIP_BUDGET:
        raise UnsupportedOnDevice(f"{what}: {trips} loop trips per work-item exceed what llvmpipe runs "
                                  f"correctly ({LLVMPIPE_TRIP_BUDGET}; Mesa's loop limiter cuts loops at "
                                  f"{LLVMPIPE_LOOP_LIMIT}); use a wider team or a split")
    per_item = max(1, LLVMPIPE_TRIP_BUDGET // trips)  # tasks one team may take in turn
    return max(groups, _ceil_div(tasks, teams * per_item))


@dataclass(frozen=True)
class RowProblem:
    """One row op over the last axis of a C-contiguous ``(rows, row_len)`` array."""

    op: str
    rows: int
    row_len: int
    dtype: str
    weight: bool = False
    bias: bool = False
    # weight / bias are float16 and read as they are (row_norm.cl PARAM_HALF), else the math type
    params_half: bool = False

    def __post_init__(self):
        if self.op not in FAMILIES:
            raise ValueError(f"unknown row op {self.op!r}; known: {sorted(FAMILIES)}")
        if self.params_half and not (FAMILIES[self.op][0] == "row_norm.cl" and (self.weight or self.bias)):
            raise ValueError(f"params_half needs a norm with a weight or bias, not {self.op!r}")
        ints_ok = self.op in ("cumsum", "cumprod")
        if self.dtype not in FLOAT_DTYPES and not (ints_ok and self.dtype in INT_DTYPES):
            raise TypeError(f"row op {self.op!r} needs float16/32/64{' or integer' if ints_ok else ''} input, "
                            f"not {self.dtype}")
        if self.rows < 1 or self.row_len < 1:
            raise ValueError("RowProblem needs rows and row_len >= 1 (empty cases are the API's)")


@dataclass(frozen=True)
class RowForce:
    """Overrides; None = the planner's choice. Impossible requests raise, never degrade."""

    cache: str | None = None
    sg_mode: str | None = None
    sg_size: int | None = None
    lanes: int | None = None
    wg_size: int | None = None
    split: int | None = None  # chunks per row (two launches; scans: reduce-then-scan)
    vec: int | None = None  # elements per load of a register-cached softmax / norm row
    lookback: bool | None = None  # scans on CUDA: the one-pass decoupled look-back (or not)
    flat_write: bool | None = None  # split norms: a fold launch, then a flat write (or not)

    def __post_init__(self):
        # Checked when built, as Force's fields are: a typo such as lanes=0 or cache="reg"
        # fails here instead of meaning "the planner's choice" or failing deep in the planner.
        for name in ("sg_size", "lanes", "wg_size", "split", "vec"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"RowForce.{name} must be an int or None, not {type(value).__name__}")
            if value < 1 or (name != "split" and value & (value - 1)):
                kind = "a positive int" if name == "split" else "a positive power of two"
                raise ValueError(f"RowForce.{name}={value} must be {kind}")
        if self.vec is not None and self.vec > VEC_MAX:
            raise ValueError(f"RowForce.vec={self.vec} must be 1, 2, 4, 8 or 16")
        if self.cache is not None and self.cache not in CACHES:
            raise ValueError(f"unknown cache {self.cache!r}; known: {', '.join(CACHES)}")
        if self.sg_mode is not None and self.sg_mode not in SG_MODES + ("shuffle",):
            raise ValueError(f"unknown sg_mode {self.sg_mode!r}; known: {', '.join(SG_MODES + ('shuffle',))}")
        for name in ("lookback", "flat_write"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"RowForce.{name} must be a bool or None, not {type(value).__name__}")


@dataclass(frozen=True)
class RowPass:
    """One launch of a plan. Buffers: "input", "output", "partials" (per (row, chunk): scan
    totals, or two statistics of the other families) and "carries" (scans: the totals'
    inclusive scan)."""

    options: tuple[str, ...]
    global_size: int
    local_size: int
    reads: str
    writes: str
    n_rows: int
    row_len: int
    chunk_len: int
    defines: tuple[tuple[str, str], ...] = ()  # the -D pairs of ``options`` (CUDA builds from these)


@dataclass(frozen=True)
class RowPlan:
    """How a row op runs: one kernel launch over every row."""

    op: str
    cache: str
    sg_mode: str
    sg_size: int | None
    reqd_sg: str
    wg_size: int
    lanes: int
    nper: int
    local_len: int
    local_mem_bytes: int
    acc_dtype: str
    out_dtype: str
    kernel_file: str
    entry: str
    defines: tuple[tuple[str, str], ...]
    options: tuple[str, ...]
    global_size: int
    local_size: int
    scalars: tuple[tuple[str, str, int], ...]
    split: int = 1
    passes: tuple[RowPass, ...] = ()  # the launches in order (one unless split)
    vec: int = 1  # elements per load of a register-cached row (VEC)
    lookback_tile: int = 0  # scans: elements per look-back tile (0: no look-back)
    flat_write: bool = False  # split norms: statistics, fold, flat write (three launches)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def require_fp64(caps: DeviceCaps, problem: RowProblem, acc: str) -> None:
    """Raise ``UnsupportedOnDevice`` where the input or the accumulator is float64 on a device
    without fp64."""
    if "float64" in (acc, problem.dtype) and not caps.fp64:
        raise UnsupportedOnDevice(f"float64 {problem.op} needs fp64, which device {caps.name!r} lacks; "
                                  "convert the input with .astype(numpy.float32)")


def row_sg_mode(caps: DeviceCaps, force: RowForce) -> str:
    """The sub-group mode of a row launch: plan.py's choice, and local memory where the device
    has no sub-groups and none was forced."""
    sg_mode = _choose_sg_mode(caps, force.sg_mode)
    if force.sg_mode is None and not caps.subgroup_sizes:
        sg_mode = "local"
    return sg_mode


def _pow2_ceil(n: int) -> int:
    n = max(int(n), 1)
    return 1 << (n - 1).bit_length()


def reg_budget(caps: DeviceCaps, acc_bytes: int, wg: int = 1) -> int:
    """Row elements one lane (of a group of ``wg``) may cache in private memory."""
    if caps.device_type == "cpu":
        return max(1, min(REG_FLOATS_CPU * 4 // acc_bytes, CPU_GROUP_PRIVATE_BYTES // (max(1, wg) * acc_bytes)))
    floats = REG_FLOATS_ARM if caps.vendor == "arm" else REG_FLOATS
    return max(1, floats * 4 // acc_bytes)


def local_budget(caps: DeviceCaps) -> int:
    """Bytes of local memory a row cache (plus the reduce scratch) may take."""
    return min(caps.local_mem_size // LOCAL_SHARE, LOCAL_CAP)


def out_dtype_of(op: str, dtype: str) -> str:
    if op == "quantize_int8":
        return "int8"
    if op in SCAN_OPS and dtype in INT_DTYPES:
        # numpy's cumsum/cumprod: booleans and signed integers give int64, unsigned uint64
        return "uint64" if dtype.startswith("uint") else "int64"
    return dtype


def acc_dtype_of(op: str, dtype: str) -> str:
    if op in SCAN_OPS and dtype in INT_DTYPES:
        return out_dtype_of(op, dtype)  # exact in 64 bits, wrapping like numpy
    return "float64" if dtype == "float64" else "float32"


def plan_row(caps: DeviceCaps, problem: RowProblem, force: RowForce | None = None) -> RowPlan:
    """Choose cache, sub-group mode/width, work-group size and lanes per row.

    Parameters
    ----------
    caps : DeviceCaps
    problem : RowProblem
    force : RowForce, optional
        Overrides, validated against ``caps``; a request the device or the row cannot
        take (e.g. ``cache="registers"`` for a row longer than the register budget)
        raises ``UnsupportedOnDevice``.

    Returns
    -------
    RowPlan
    """
    if problem.op in SCAN_OPS:
        from .plan_scan import plan_scan  # imports this module: the scan planner sits on its types

        return plan_scan(caps, problem, force)
    force = force or RowForce()
    if force.cache is not None and force.cache not in CACHES:
        raise ValueError(f"unknown cache {force.cache!r}; known: {', '.join(CACHES)}")
    if force.lookback:
        # was ignored here (softmax ran without it; an outside fuzz run, 2026-11-30)
        raise UnsupportedOnDevice(f"lookback=True is a scan plan (cumsum, cumprod, logcumsumexp); "
                                  f"{problem.op} has no look-back")
    # float16 needs no cl_khr_fp16: vload_half/vstore_half are core OpenCL C (math is float)
    acc = "float64" if problem.dtype == "float64" else "float32"
    require_fp64(caps, problem, acc)
    acc_bytes = np.dtype(acc).itemsize
    cpu = caps.device_type == "cpu"
    k = problem.row_len

    sg_mode = row_sg_mode(caps, force)
    if sg_mode == "shuffle_qcom" and acc_bytes == 8:
        if force.sg_mode is not None:
            raise UnsupportedOnDevice("the qcom shuffle moves 32-bit values: no float64 row ops with it")
        sg_mode = "local"
    shuffle = _shuffle_mode(caps)
    if sg_mode == "local":
        sg_size, reqd = None, "none"
    else:
        sg_size, reqd = _choose_sg_size(caps, force.sg_size)
    wg = _choose_wg(caps, Force(wg_size=force.wg_size), sg_size)
    wg, wide_budget = _cuda_register_wg(caps, problem, force, wg, acc_bytes)
    scale_passes = _cpu_scale_passes(caps, problem, force)
    cpu_rows = not scale_passes and _cpu_register_rows(caps, problem, force, acc_bytes)
    long_passes = not cpu_rows and (_cpu_long_passes(caps, problem, force) or scale_passes)
    if cpu_rows or long_passes:
        sg_mode, sg_size, reqd = "local", None, "none"
        short = cpu_rows or (scale_passes and k * np.dtype(problem.dtype).itemsize <= CPU_ONE_TRIP_ROW_BYTES)
        wg = min(CPU_ROW_WG if short else 1, _pow2_floor(caps.max_work_group_size))

    # CPUs: a work-group runs on one core; a team stays inside one sub-group (or is one
    # work-item without sub-groups), as in plan.py. GPUs spread long rows over the group.
    lanes_cap = wg if not cpu else min(wg, sg_size or 1)
    budget_reg = wide_budget or reg_budget(caps, acc_bytes, wg)
    vec = _row_vec(caps, problem, force, cpu_rows)
    if cpu_rows or long_passes:
        lanes = 1
    elif force.lanes is not None:
        lanes = force.lanes
        if lanes < 1 or lanes & (lanes - 1) or lanes > wg:
            raise ValueError(f"lanes={lanes} must be a power of two <= the work-group size {wg}")
    elif vec > 1:
        runs = k // vec
        lanes = _run_lanes(caps, problem, vec, lanes_cap, budget_reg)
        if (problem.op in ONE_SUBGROUP_TEAMS and sg_size and lanes > sg_size
                and _ceil_div(runs, sg_size) * vec <= budget_reg):
            lanes = sg_size
    else:
        lanes = max(1, min(lanes_cap, _pow2_floor(_ceil_div(k, PER_LANE))))
        if force.cache in (None, "registers") and _ceil_div(k, lanes) > budget_reg:
            lanes = max(lanes, min(lanes_cap, _pow2_ceil(_ceil_div(k, budget_reg))))
    if sg_mode == "builtin" and 1 < lanes < sg_size:
        # a built-in reduce spans a whole sub-group: narrow teams need a butterfly
        if shuffle and force.sg_mode is None:
            sg_mode = shuffle
        elif force.lanes is not None:
            raise UnsupportedOnDevice(f"lanes={lanes} below the sub-group width {sg_size} needs a shuffle; "
                                      f"{caps.name!r} has {'none' if not shuffle else 'one, but builtin was forced'}")
        else:
            lanes = 1 if cpu else min(sg_size, wg)

    local_len = _ceil_div(k, LOCAL_STEP) * LOCAL_STEP
    if force.cache == "local" and force.lanes is None and (wg // lanes) * local_len * acc_bytes > local_budget(caps):
        lanes = wg  # one row per group keeps a forced local cache within the budget
        if sg_mode == "builtin" and lanes < sg_size:
            lanes = 1
    if force.cache == "local" and force.lanes is not None and force.wg_size is None:
        # forced narrow teams: fewer of them per group keep the row buffers in local memory
        while wg > max(lanes, sg_size or 1, 1) and (wg // lanes) * local_len * acc_bytes + wg * acc_bytes > \
                caps.local_mem_size:
            wg //= 2
    teams = wg // lanes
    scratch = _team_scratch(lanes, wg, sg_mode, sg_size, acc_bytes)
    nper = _pow2_ceil(_ceil_div(k, lanes)) if vec == 1 else _ceil_div(k // vec, lanes) * vec
    fits_reg = nper <= budget_reg
    fits_local = teams * local_len * acc_bytes + scratch <= (local_budget(caps) if force.cache is None
                                                            else caps.local_mem_size)
    if problem.op in STATS_ONLY and force.cache == "local":
        raise UnsupportedOnDevice(f"{problem.op} writes no row: it reads the row once from memory, or twice "
                                  "over registers (cache='registers' or 'none')")
    if force.cache is not None:
        cache = force.cache
        if cache == "registers" and not fits_reg:
            raise UnsupportedOnDevice(f"cache='registers': {nper} elements per lane exceed the budget of "
                                      f"{budget_reg} on {caps.name!r} (row_len {k}, lanes {lanes})")
        if cache == "local" and not fits_local:
            raise UnsupportedOnDevice(f"cache='local': {teams} x {local_len} x {acc_bytes} B exceeds "
                                      f"{caps.name!r}'s {caps.local_mem_size} B of local memory")
    elif fits_reg and not (cpu and problem.op in STATS_ONLY) and not _cpu_walks_scale_rows(caps, problem, cpu_rows):
        # moments on CPUs: rows read once through vector runs beat two passes over a work-item's
        # registers (rows of 1000 float32: PoCL 3.1 -> 1.8 GB/s, Intel 5.7 -> 3.7, 2 cores)
        cache = "registers"
    elif fits_local and not cpu and problem.op not in STATS_ONLY:
        cache = "local"
    else:
        cache = "none"
    cpu_passes = _cpu_passes(caps, problem, force, cpu_rows) or long_passes
    if cpu_passes:
        cache = "none"  # CPU_PASSES: the row walked in vectors from the core's caches
    split, chunk = _row_split(caps, problem, force, cache, lanes, wg, sg_size)
    if long_passes and split > 1:
        # chunks that stay in a core's L2 between their two walks
        split = max(split, _ceil_div(k, CPU_PASSES_CHUNK))
        chunk = _ceil_div(_ceil_div(k, split), ROW_SPLIT_ALIGN) * ROW_SPLIT_ALIGN
        split = _ceil_div(k, chunk)
    if split > 1:
        cache, nper, local_len = "none", 1, 1
        cpu_passes = long_passes
    if cache == "local":
        if force.vec is not None and force.vec > 1:
            raise UnsupportedOnDevice(f"vec={force.vec}: a row cached in local memory is read element by "
                                      f"element (rows of {k} on {caps.name!r})")
        nper, vec = 1, 1
    elif cache == "none":
        nper, vec = 1, _walk_vec(caps, problem, force)
        wide = _cuda_uncached_wg(caps, problem, force, split, vec)
        if wide:
            wg = lanes = wide
            teams = 1
            scratch = _team_scratch(lanes, wg, sg_mode, sg_size, acc_bytes)
    if cache != "local":
        local_len = 1
    local_bytes = scratch + (teams * local_len * acc_bytes if cache == "local" else 0)
    if local_bytes > caps.local_mem_size:
        raise UnsupportedOnDevice(f"{local_bytes} B of local memory exceeds {caps.name!r}'s {caps.local_mem_size} B")

    kernel_file, entry, extra = FAMILIES[problem.op]
    out = out_dtype_of(problem.op, problem.dtype)

    def variant(phase):
        defines = {
            "IN_T": CL_TYPE[problem.dtype], "OUT_T": CL_TYPE[out], "ACC_T": CL_TYPE[acc], "ACC_BYTES": acc_bytes,
            "ACC_IS_FLOAT": 1, "IN_HALF": int(problem.dtype == "float16"), "OUT_HALF": int(out == "float16"),
            "WG_SIZE": wg, "LANES": lanes, "SG_MODE": _SG_MODE_MACRO[sg_mode], "SG_SIZE": sg_size or 0,
            "REQD_SG": _REQD_MACRO[reqd], "CACHE": _CACHE_MACRO[cache], "NPER": nper, "LOCAL_LEN": local_len,
            "SPLIT": split, "PHASE": phase, "VEC": vec, **extra,
        }
        if vec > 1 and caps.backend == "opencl" and caps.implementation == "nvidia":
            defines["ALIGNED_VLOAD"] = 1  # NVIDIA's OpenCL makes vloadn element loads (plan.py)
        if kernel_file in WALK_FAMILIES:
            # CPU runtimes take rows read from memory a run at a time through vector built-ins
            # (softmax exp, norm run sums, quantize rint: PoCL 2-3x on long rows, README);
            # CUDA takes softmax and norm runs too, in scalar loops (CUDA_WALK_RUNS)
            runs = (cpu and caps.backend == "opencl") or (caps.backend == "cuda" and kernel_file in CUDA_WALK_RUNS)
            defines["WALK_RUNS"] = int(runs and cache == "none" and vec > 1)
        if kernel_file == "softmax.cl" and cpu and cache == "registers":
            defines["SELECT_MAX"] = 1  # softmax.cl: a register row's max by compare and select
        if cpu_passes:
            defines["CPU_PASSES"] = 1
            if kernel_file == "softmax.cl" and acc_bytes == 4 and caps.implementation in CPU_OWN_EXP_IMPLEMENTATIONS:
                defines["CPU_OWN_EXP"] = 1
            if _cpu_half_terms(caps, problem, split):
                defines["CPU_HALF_TERMS"] = _pow2_ceil(max(problem.row_len, 256))
            if caps.implementation in CPU_OWN_EXP_IMPLEMENTATIONS:
                defines["CPU_OWN_MATH"] = 1  # cpu_own_math.h: isfinite, rsqrt, ... by operators
        if kernel_file in CUDA_WALK_RUNS and cuda_walk_back(caps, problem, cache, split, lanes):
            defines["WALK_BACK"] = 1
            # CUDA only, VEC-wide runs (row_common.h's #error); WALK_BACK alone where a test forces
            # the backward walk on an OpenCL device
            if kernel_file in CUDA_STREAM_WRITE_FAMILIES and caps.backend == "cuda" and vec > 1:
                defines["STREAM_WRITE"] = 1  # row_common.h: the write walk's cache-streaming hints
        min_blocks = max(cuda_min_blocks(caps, problem, cache, nper, wg), cuda_split_min_blocks(caps, split, wg))
        if phase == 3 and caps.backend == "cuda":
            min_blocks = _resident_blocks(caps, CUDA_FLAT_WRITE_SHARE, wg)  # FLAT_WRITE's write launch
        if min_blocks > 1:
            defines["MIN_BLOCKS"] = min_blocks
        if kernel_file == "row_norm.cl":
            defines.update({"HAS_WEIGHT": int(problem.weight), "HAS_BIAS": int(problem.bias),
                            "PARAM_HALF": int(problem.params_half)})
            if phase >= 2 and flat:  # (set below, before the first variant)
                defines["FLAT_WRITE"] = 1
            if _param_runs(caps, problem, cache, vec):
                defines["PARAM_RUNS"] = 1
            if _cuda_wide_layer_norm_stores(caps, problem, cache, vec):
                defines["ROW_WIDE_STORES"] = 1
            if _cuda_exact_runs(caps, problem, cache, split, lanes, nper):
                defines["ROW_RUNS_EXACT"] = 1
        pairs = tuple(sorted((name, str(value)) for name, value in defines.items()))
        return pairs, build_options(pairs, caps.cl_std if sg_mode != "local" else None)

    tasks = problem.rows * split
    passes = []
    flat = _flat_write(caps, problem, force, split, vec)
    phases = (((0, "input", "output"),) if split == 1 else
              ((1, "input", "partials"), (2, "input", "partials"), (3, "input", "output")) if flat else
              ((1, "input", "partials"), (2, "input", "output")))
    for phase, reads, writes in phases:
        pairs, options = variant(phase)
        if phase == 3:
            # a group per WG_SIZE runs of one row, one run of VEC elements a work-item
            groups = problem.rows * _ceil_div(k // vec, wg)
        else:
            trips = row_trips(problem.op, cache, lanes, nper, chunk, split, phase, sg_size)
            needed = _ceil_div(tasks, teams)
            one_trip = (_cuda_one_trip(caps, problem, cache, split, nper, vec)
                        or _cpu_one_trip(problem, cpu_passes, split))
            groups = needed if one_trip else _row_groups(caps, needed)
            groups = _trip_groups(caps, groups, tasks, teams, trips, f"{problem.op} of rows of {k}")
        passes.append(RowPass(options=options, global_size=groups * wg, local_size=wg, reads=reads, writes=writes,
                              n_rows=problem.rows, row_len=k, chunk_len=chunk, defines=pairs))
    pairs, options = variant(0 if split == 1 else 2)
    scalars = (("n_rows", "u64", problem.rows), ("row_len", "u64", k), ("chunk_len", "u64", chunk))
    return RowPlan(op=problem.op, cache=cache, sg_mode=sg_mode, sg_size=sg_size, reqd_sg=reqd, wg_size=wg,
                   lanes=lanes, nper=nper, local_len=local_len, local_mem_bytes=local_bytes, acc_dtype=acc,
                   out_dtype=out, kernel_file=kernel_file, entry=entry, defines=pairs, options=options,
                   global_size=passes[-1].global_size, local_size=wg, scalars=scalars, split=split,
                   passes=tuple(passes), vec=vec, flat_write=flat)


# Split rms_norm / layer_norm rows on CUDA write in a launch of their own, flat over the rows
# (row_norm.cl FLAT_WRITE): PHASE 2 folds each row's partials into its write's constants, and
# PHASE 3 gives each work-item one run of VEC elements, a group a tile of one row. The write
# launch had walked each chunk with the group that took its statistics (a wave of 4 groups an
# SM), 5-10 % behind inductor's flat pointwise kernel; on an H100 a flat write probe took
# float16 64 x 4194304 363 us against 389 walked, float16 1 x 2^28 532-534 against 617-622,
# float32 1 x 2^28 1055-1059 against 1299-1312 (benchmarks/param_keep_h100_2026-11-28/).
# Rows whose length is a multiple of VEC only (every run inside one row, aligned with it).
# Only a single row by default: with several, the flat write takes one row after another,
# and each row's pass asks for the weight again after the row before pushed it out of L2,
# where the chunk walk has the same columns of every row in flight together. Public call,
# H100, torch tensors with a weight (bias), walk / flat, GB/s (benchmarks/flat_write_h100_2026-11-28/):
# 1 x 2^28 float16 rms_norm 1431-1444 / 1506, layer_norm 1426-1443 / 1492, float32 rms_norm
# 1443-1456 / 1531, layer_norm 1440-1445 / 1528; 64 x 4194304 float32 rms_norm 1916-1923 /
# 1544, layer_norm 1914-1920 / 1514 (a 16 MB weight; torch.compile's flat kernel: 1523,
# 1562), float16 level (1896-1900 / 1893). The H200 agrees (benchmarks/softmax_f16_long_rows_
# h200_2026-11-29/): float32 1 x 2^28 +5 %, float16 level, 64 x 4194304 flat 12-30 % behind.
FLAT_WRITE_OPS = ("rms_norm", "layer_norm")
CUDA_FLAT_WRITE_MAX_ROWS = 1
# ... whose write launch (PHASE 3: one run of VEC elements a thread, no loop) asks nvcc to fit
# this share of an SM's threads (MIN_BLOCKS). With the split's MIN_BLOCKS 4 nvcc gave float16
# rms_norm's and layer_norm's write with a weight 40 registers, six groups of 256 an SM; under
# ncu on an H200 (float16 rms_norm 1 x 2^28 with a weight) it ran 400 us at 83 % of peak DRAM
# with 60 % of warps active, against inductor's write at 365 us, 91 %, 86 % (29 registers).
CUDA_FLAT_WRITE_SHARE = 1.0


def _flat_write(caps: DeviceCaps, problem: RowProblem, force: RowForce, split: int, vec: int) -> bool:
    """Whether split norm rows take the fold and flat write launches (FLAT_WRITE_OPS): on
    CUDA for up to CUDA_FLAT_WRITE_MAX_ROWS rows, or where forced (``RowForce.flat_write``;
    an impossible force raises)."""
    fits = split > 1 and problem.op in FLAT_WRITE_OPS and problem.row_len % vec == 0
    if force.flat_write is not None:
        if force.flat_write and not fits:
            raise UnsupportedOnDevice(f"flat_write=True: split rms_norm / layer_norm rows whose length is a "
                                      f"multiple of the run ({vec}); this plan: {problem.op}, split {split}, "
                                      f"rows of {problem.row_len}")
        return bool(force.flat_write)
    return fits and caps.backend == "cuda" and problem.rows <= CUDA_FLAT_WRITE_MAX_ROWS


def _run_lanes(caps: DeviceCaps, problem: RowProblem, vec: int, lanes_cap: int, budget_reg: int) -> int:
    """Lanes of a row read in runs of VEC: MIN_ELEMS_PER_LANE's elements a lane (one run by
    default), or two runs a lane where _cuda_two_runs_a_lane and the registers still hold them."""
    runs = problem.row_len // vec

    def lanes_for(per_lane: int) -> int:
        return max(1, min(lanes_cap, _pow2_floor(_ceil_div(runs, per_lane))))

    lanes = lanes_for(max(1, MIN_ELEMS_PER_LANE.get(problem.op, 1) // vec))
    if _cuda_two_runs_a_lane(caps, problem, runs):
        two = lanes_for(2)
        if two < lanes and _ceil_div(runs, two) * vec <= budget_reg:
            lanes = two
    return lanes


def _cuda_two_runs_a_lane(caps: DeviceCaps, problem: RowProblem, runs: int) -> bool:
    """CUDA GPUs past CUDA_TWO_RUNS_GBPS_PER_SM, rows of 4 runs or more, launches of
    CUDA_TWO_RUNS_MIN_WAVES waves of threads or more (with two runs a lane)."""
    if runs < 4 or not _fast_memory_cuda(caps):
        return False
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes

    sms = max(1, caps.compute_units)
    return problem.rows * (runs // 2) >= CUDA_TWO_RUNS_MIN_WAVES * sms * device_extras(caps)["threads_per_sm"]


def _fast_memory_cuda(caps: DeviceCaps) -> bool:
    """A CUDA GPU with at least CUDA_TWO_RUNS_GBPS_PER_SM of DRAM bandwidth an SM (H200: yes,
    H100: no; unknown bandwidth: no)."""
    if caps.backend != "cuda":
        return False
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes

    return device_extras(caps)["dram_gbps"] >= CUDA_TWO_RUNS_GBPS_PER_SM * max(1, caps.compute_units)


def _cuda_wide_layer_norm_stores(caps: DeviceCaps, problem: RowProblem, cache: str, vec: int) -> bool:
    """float16 layer_norm rows in registers of at most CUDA_WIDE_STORE_LAYER_NORM_RUNS runs, on
    fast-memory CUDA GPUs: one 16-byte store a run (row_norm.cl ROW_WIDE_STORES)."""
    return (problem.op == "layer_norm" and problem.dtype == "float16" and cache == "registers" and vec > 1
            and problem.row_len // vec <= CUDA_WIDE_STORE_LAYER_NORM_RUNS and _fast_memory_cuda(caps))


def _cuda_one_trip(caps: DeviceCaps, problem: RowProblem, cache: str, split: int, nper: int, vec: int) -> bool:
    """A group for every TEAMS rows (no grid-stride trips; CUDA_ONE_TRIP_OPS): rows in registers,
    launches of CUDA_ONE_TRIP_MIN_BYTES or more, fast-memory CUDA GPUs; float32, or float16
    rms_norm and softmax lanes of two runs or more (CUDA_ONE_TRIP_HALF_OPS)."""
    itemsize = np.dtype(problem.dtype).itemsize
    kind_ok = problem.dtype == "float32" or (problem.dtype == "float16" and problem.op in CUDA_ONE_TRIP_HALF_OPS
                                              and nper >= 2 * vec)
    return (problem.op in CUDA_ONE_TRIP_OPS and kind_ok and cache == "registers" and split == 1
            and problem.rows * problem.row_len * itemsize >= CUDA_ONE_TRIP_MIN_BYTES and _fast_memory_cuda(caps))


def _cuda_exact_runs(caps: DeviceCaps, problem: RowProblem, cache: str, split: int, lanes: int, nper: int) -> bool:
    """CUDA float16 layer_norm rows in registers that fill their team's runs exactly
    (lanes * nper == row_len): row_common.h ROW_RUNS_EXACT, the row length a constant of the
    build, no clamp or padding of the runs. With the rest of that change (no padding select,
    a power-of-two row length's reciprocal in place of two divisions a trip, the second pass's
    deviations kept for the write), the loop of rows of 16 went from ~235 to ~167 instructions
    a trip. H200, public call, GB/s, before / after, three alternating rounds
    (benchmarks/layer_norm_f16_short_h200_2026-11-28/): 16777216 x 16 3610-3651 / 3968-4028,
    1048576 x 32 3400-3438 / 3761-3773, 442368 x 128 3648-3691 / 3844-3881, 65536 x 4096
    3531-3572 / 3867-3941; 4194304 x 64 4001-4039 / 3956-4021. Without ROW_RUNS_EXACT (the rest
    kept) rows of 32 and 4096 gave back most of their gain (3511-3578, 3717-3754). float32 keeps
    its kernel: the same change took it from 40 to 48 registers and lost 2-5 %."""
    return (caps.backend == "cuda" and problem.op == "layer_norm" and problem.dtype == "float16"
            and cache == "registers" and split == 1 and lanes * nper == problem.row_len)


def _param_runs(caps: DeviceCaps, problem: RowProblem, cache: str, vec: int) -> bool:
    """The norms' write reads weight and bias in runs of VEC beside the row (row_norm.cl
    PARAM_RUNS): on CUDA, where element loads of them were the split norms' gap to torch.compile."""
    return (caps.backend == "cuda" and problem.op in ("rms_norm", "layer_norm") and vec > 1
            and cache != "local" and (problem.weight or problem.bias))


def _team_scratch(lanes: int, wg: int, sg_mode: str, sg_size: int | None, acc_bytes: int) -> int:
    """Local memory of a group's team reduce: none for one-lane teams, else a slot per
    work-item (local mode) or per sub-group."""
    return 0 if lanes == 1 else (wg if sg_mode == "local" else wg // sg_size) * acc_bytes


def _cuda_uncached_wg(caps: DeviceCaps, problem: RowProblem, force: RowForce, split: int, vec: int) -> int | None:
    """Whole rows read twice from memory on CUDA: the block (= team) width that leaves each
    thread CUDA_UNCACHED_RUNS runs of the row, 512 or 1024 (CUDA_UNCACHED_WG; float16 softmax
    and log_softmax at most CUDA_UNCACHED_HALF_SOFTMAX_WG); None keeps the
    planner's group (256), as does a forced launch shape."""
    if not (caps.backend == "cuda" and split == 1 and problem.op in CUDA_UNCACHED_OPS
            and force.wg_size is None and force.lanes is None):
        return None
    widest = CUDA_UNCACHED_WG
    if problem.dtype == "float16" and problem.op in ("softmax", "log_softmax"):
        widest = CUDA_UNCACHED_HALF_SOFTMAX_WG
    wide = min(widest, _pow2_floor(caps.max_work_group_size),
               _pow2_floor(max(1, problem.row_len // vec // CUDA_UNCACHED_RUNS[problem.op])))
    return wide if wide > 256 else None


def _cuda_register_wg(caps: DeviceCaps, problem: RowProblem, force: RowForce, wg: int,
                      acc_bytes: int) -> tuple[int, int | None]:
    """(group, elements a lane may cache) of a CUDA softmax or norm row that a group of ``wg``
    cannot cache in registers but a wider one can (CUDA_WIDE_REGISTER_OPS,
    CUDA_WIDE_REGISTER_ROWS, CUDA_WIDE_ONLY_PAST_BUDGET); ``(wg, None)`` (the usual budget)
    otherwise. A GPU whose registers cannot hold such a group has it re-planned at launch
    (the CUDA backend's max_threads_per_block check)."""
    wide = CUDA_WIDE_REGISTER_ROWS.get(problem.dtype)
    if (caps.backend != "cuda" or problem.op not in CUDA_WIDE_REGISTER_OPS or wide is None
            or any(v is not None for v in (force.wg_size, force.lanes, force.cache, force.split, force.vec))
            or problem.row_len % VEC_MAX != 0):
        return wg, None
    widest, per_thread = wide
    top = min(widest, _pow2_floor(caps.max_work_group_size))
    budget = reg_budget(caps, acc_bytes, wg)
    need = _pow2_ceil(_ceil_div(problem.row_len, budget))
    if wg < need <= top:
        if problem.op in CUDA_WIDE_ONLY_PAST_BUDGET.get(problem.dtype, ()):
            return wg, None
        group = need
    elif need > top and problem.row_len <= top * per_thread:
        group, budget = top, per_thread
    else:
        return wg, None
    # a group a row: only where the rows fill every SM's threads once (fewer long rows are
    # split over groups and read from memory, as before)
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes
    wave = max(1, caps.compute_units) * max(1, device_extras(caps)["threads_per_sm"] // group)
    return (group, budget) if problem.rows >= wave else (wg, None)


def cuda_walk_back(caps: DeviceCaps, problem: RowProblem, cache: str, split: int, lanes: int) -> bool:
    """Whether a CUDA launch of whole rows read from memory writes them last run first
    (WALK_BACK): where its rows in flight, one a team of ``lanes`` threads, pass the L2."""
    if caps.backend != "cuda" or cache != "none" or split != 1 or problem.op not in CUDA_UNCACHED_OPS:
        return False
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes
    extras = device_extras(caps)
    resident = max(1, caps.compute_units) * max(1, extras["threads_per_sm"] // lanes)
    row_bytes = problem.row_len * np.dtype(problem.dtype).itemsize
    return 0 < extras["l2_bytes"] < min(problem.rows, resident) * row_bytes


def cuda_min_blocks(caps: DeviceCaps, problem: RowProblem, cache: str, nper: int, wg: int) -> int:
    """``MIN_BLOCKS`` of a row launch (groups of ``wg`` per SM that nvcc fits registers for,
    CUDA_RESIDENT); 1 (no cap) off CUDA, off float16 register-cached softmax / norm rows, and
    for NPER past the table."""
    if (caps.backend != "cuda" or cache != "registers" or problem.dtype != "float16"
            or FAMILIES[problem.op][0] not in VEC_FAMILIES):
        return 1
    for most, shares in CUDA_RESIDENT:
        if nper <= most:
            return _resident_blocks(caps, shares.get(problem.op, shares[None]), wg)
    return 1


def _resident_blocks(caps: DeviceCaps, share: float, wg: int) -> int:
    """``MIN_BLOCKS`` that keeps ``share`` of a CUDA SM's threads resident in groups of ``wg``."""
    from .backends.cuda.probe import device_extras  # pure: reads caps.notes
    return max(1, int(device_extras(caps)["threads_per_sm"] * share) // wg)


def _row_groups(caps: DeviceCaps, needed: int) -> int:
    """Work-groups of a softmax / norm / scale launch: on GPUs up to GPU_GROUPS_PER_CU per
    compute unit (the rest is the kernels' grid stride), elsewhere plan.py's rule."""
    if caps.device_type == "gpu":
        return max(1, min(needed, max(1, caps.compute_units) * GPU_GROUPS_PER_CU))
    return _groups(caps, needed)


def _cpu_register_rows(caps: DeviceCaps, problem: RowProblem, force: RowForce, acc_bytes: int) -> bool:
    """CPU runtimes that vectorise across work-items (Intel's, PoCL; not llvmpipe), softmax and
    norm rows (and CPU_ROW_OPS) short enough for one work-item's registers, nothing forced
    but the cache:
    one row per work-item, groups of CPU_ROW_WG, the row loaded in 64-byte runs."""
    family_ok = FAMILIES[problem.op][0] in VEC_FAMILIES or problem.op in CPU_ROW_OPS.get(caps.implementation, ())
    if caps.device_type != "cpu" or llvmpipe_loop_limited(caps) or not family_ok:
        return False
    if dataclasses.replace(force, cache=None) != RowForce() or force.cache not in (None, "registers"):
        return False
    vec = _widest_vec(problem, _cpu_vec_bytes(caps, problem))
    return _ceil_div(problem.row_len, vec) * vec <= reg_budget(caps, acc_bytes, CPU_ROW_WG)


def _cpu_half_terms(caps: DeviceCaps, problem: RowProblem, split: int) -> bool:
    """A CPU_PASSES float16 softmax row that keeps its exp terms (CPU_HALF_TERMS): whole rows
    of at most CPU_HALF_TERMS_MAX elements on CPU_HALF_TERMS_IMPLEMENTATIONS."""
    return (problem.op == "softmax" and problem.dtype == "float16" and split == 1
            and problem.row_len <= CPU_HALF_TERMS_MAX and caps.implementation in CPU_HALF_TERMS_IMPLEMENTATIONS)


def _cpu_passes(caps: DeviceCaps, problem: RowProblem, force: RowForce, cpu_rows: bool) -> bool:
    """softmax and norm rows (CPU_PASSES_FAMILIES) that CPU register runs would take, no cache
    forced: one work-item a row walks it in vectors from its core's caches (softmax.cl and
    row_norm.cl CPU_PASSES), where the register row went through a private array in memory.
    float16 softmax takes each exp twice (a stored half term would be rounded twice): pip's
    PoCL 62500 x 128 26.9 -> 17.4 ms, 8000 x 1000 24.8 -> 14.6. Intel's rows under 64 had kept
    the register plan (it vectorises across the group's work-items: rows of 32 ran 3x slower
    walked with a grid stride) until they took one trip a work-item (_cpu_one_trip): 250000 x 32
    device arrays, ms a call, register / walked (one_trip_intel.txt): softmax 8.5-9.3 / 7.1-7.9,
    rms_norm 9.4-11.5 / 4.2-5.9, layer_norm 14.7-23.5 / 5.9-6.3.
    float32 device arrays, ms a call, register plan / CPU_PASSES, three alternating rounds on a
    2-core AMD EPYC VM (benchmarks/softmax_cpu_passes_2026-11-28/table.md): pip's PoCL
    62500 x 128 20-23 / 9-11, 8000 x 1000 17-27 / 7-8; Debian's PoCL 14-22 / 8-11, 12-26 / 6-8;
    Intel 11-12 / 7-10, 19-21 / 5; Intel 250000 x 32 9-10 / 28-30 (ab_long_v1.txt)."""
    return cpu_rows and force.cache is None and FAMILIES[problem.op][0] in CPU_PASSES_FAMILIES


def _cpu_long_passes(caps: DeviceCaps, problem: RowProblem, force: RowForce) -> bool:
    """softmax and norm rows too long for a work-item's registers, on the CPU runtimes that take
    register rows, nothing forced: CPU_PASSES too, a task a work-item in groups of one. A row a
    task where there are at least two rows a core (a row of 4 MB no longer stays in L2 between the
    walks, and still ran 4-6x the online walk's speed); fewer
    rows are split (the planner's want of two tasks a core) into chunks of at most
    CPU_PASSES_CHUNK, each walked twice, then written. Before: groups of 256 work-items,
    chunks of 8192 walked online (a scalar exp a run for the rescale), 1.3-1.5 GB/s on pip's
    PoCL and Intel's runtime where torch (2 threads) gave 10.5. float32, ms a call, before /
    after (table.md): pip's PoCL 122 x 65536 39-46 / 7-11, 8 x 1048576 48-57 / 8-10,
    1 x 4194304 20-28 / 6-11, 3 x 1048576 17-18 / 4; Intel 122 x 65536 19-22 / 4-5."""
    if caps.device_type != "cpu" or caps.backend != "opencl" or llvmpipe_loop_limited(caps):
        return False
    return FAMILIES[problem.op][0] in CPU_PASSES_FAMILIES and force == RowForce()


def _cpu_scale_passes(caps: DeviceCaps, problem: RowProblem, force: RowForce) -> bool:
    """absmax_scale and quantize_int8 rows on CPU_SCALE_PASSES_IMPLEMENTATIONS, nothing forced:
    row_scale.cl's CPU_PASSES, one work-item a row (rows of up to CPU_ONE_TRIP_ROW_BYTES in
    groups of CPU_ROW_WG, one trip each; longer rows one a group, few of them split in chunks of
    at most CPU_PASSES_CHUNK), two walks in vectors written with operators. pip's PoCL had run
    the vector built-ins of the walks (or absmax_scale's element walk) out of line
    (benchmarks/scale_cpu_passes_2026-11-29/)."""
    return (caps.device_type == "cpu" and caps.backend == "opencl" and not llvmpipe_loop_limited(caps)
            and caps.implementation in CPU_SCALE_PASSES_IMPLEMENTATIONS and problem.op in CPU_WALKED_SCALE_OPS
            and force == RowForce())


def _cpu_one_trip(problem: RowProblem, cpu_passes: bool, split: int) -> bool:
    """CPU_PASSES rows of at most CPU_ONE_TRIP_ROW_BYTES, whole: a group for every CPU_ROW_WG
    rows, so each work-item takes one row, where the grid stride of plan.py's 32 groups a core
    gave each work-item hundreds of rows 1024 apart. PoCL runs a group's work-items one after
    another on one thread: with the stride the rows each walked lay 128 KB apart (rows of 32),
    with one trip the group's rows are contiguous. Device arrays, ms a call, grid stride / one
    trip, two alternating rounds on the 2-core AMD EPYC VM (benchmarks/norm_cpu_passes_2026-11-28/
    one_trip.txt): pip's PoCL softmax 1048576 x 16 54 / 23, 250000 x 32 26-30 / 9; rms_norm
    250000 x 32 22-23 / 8-9, 62500 x 128 6-7 / 3-4; Debian's PoCL alike; Intel's runtime
    62500 x 128 softmax 8-11 / 4-5 (and its rows under 64, walked since: _cpu_passes). Rows of
    4096 ran level to 10 % slower (pip's PoCL rms_norm 3.0-3.2 / 3.4-3.8) and keep the stride."""
    return cpu_passes and split == 1 and problem.row_len * np.dtype(problem.dtype).itemsize <= CPU_ONE_TRIP_ROW_BYTES


def _cpu_walks_scale_rows(caps: DeviceCaps, problem: RowProblem, cpu_rows: bool) -> bool:
    """Whether scale rows that would fit the registers are read from memory instead
    (CPU_WALKED_SCALE_OPS): CPU runtimes, unless CPU register runs take the row; llvmpipe
    from LLVMPIPE_WALKED_SCALE_LEN elements."""
    if caps.device_type != "cpu" or cpu_rows or problem.op not in CPU_WALKED_SCALE_OPS:
        return False
    if llvmpipe_loop_limited(caps):
        return problem.row_len >= LLVMPIPE_WALKED_SCALE_LEN[problem.op]
    return True


def _cpu_vec_bytes(caps: DeviceCaps, problem: RowProblem) -> int:
    """Input bytes per vector run on a CPU: CPU_VEC_BYTES, or fewer where the device's
    compiler limits vectors (``DeviceCaps.vector_bytes_limit``). The row math is float32 or
    wider, so a float16 row's vectors count 4 bytes an element."""
    limit = caps.vector_bytes_limit
    if limit is None:
        return CPU_VEC_BYTES
    item = np.dtype(problem.dtype).itemsize
    return limit * item // max(item, 4)


def _check_forced_vec(caps: DeviceCaps, problem: RowProblem, vec: int) -> None:
    limit = caps.vector_bytes_limit
    if limit is not None and vec * np.dtype(problem.dtype).itemsize > _cpu_vec_bytes(caps, problem):
        raise UnsupportedOnDevice(f"vec={vec} of {problem.dtype} rows needs vectors wider than the {limit} bytes "
                                  f"{caps.name!r} compiles correctly (DeviceCaps.vector_bytes_limit)")


def _walk_vec(caps: DeviceCaps, problem: RowProblem, force: RowForce) -> int:
    """Elements per run of a row read from memory (cache "none", split rows): 16 bytes on
    GPUs, 64 on Intel's CPU runtime, any row length (a scalar head and tail take the rest); on
    PoCL 64 but for absmax_scale; 1 on llvmpipe and for scans
    (row_scan.cl has its own tiles)."""
    if force.vec is not None:
        _check_forced_vec(caps, problem, force.vec)
        return force.vec
    if FAMILIES[problem.op][0] not in WALK_FAMILIES or llvmpipe_loop_limited(caps):
        return 1
    if (caps.device_type == "cpu" and caps.implementation != "intel" and problem.op == "absmax_scale"
            and not _cpu_scale_passes(caps, problem, force)):
        # PoCL (a row per work-item, groups of 256 vectorised across work-items) was no faster
        # with runs: 1.0-1.7x the element walk's time in 6 interleaved A/Bs on a loaded 2-core
        # VM, where Intel's runtime took 0.57-1.13x (benchmarks/rowops_cpu_walk_2026-11-23).
        # With their runs through vector built-ins (WALK_RUNS) the other ops gained 2-3x;
        # absmax_scale, a compare and a divide per element, still lost (1.45-1.53 -> 1.30
        # GB/s at 16000 x 1000, level at 244 x 65536)
        return 1
    vec_bytes = _cpu_vec_bytes(caps, problem) if caps.device_type == "cpu" else VEC_BYTES
    return max(1, min(VEC_MAX, vec_bytes // np.dtype(problem.dtype).itemsize))


def _widest_vec(problem: RowProblem, vec_bytes: int) -> int:
    vec = max(1, min(VEC_MAX, vec_bytes // np.dtype(problem.dtype).itemsize))
    while vec > 1 and problem.row_len % vec:
        vec //= 2
    return vec


def _row_vec(caps: DeviceCaps, problem: RowProblem, force: RowForce, cpu_rows: bool = False) -> int:
    """Elements per load of a register-cached row (``VEC``): 16 bytes on GPUs where the row
    length is a multiple of it (so every row starts aligned), else the widest power of two
    that divides the row; 1 on CPUs, for the other families and under a forced cache other
    than registers or a forced split."""
    if force.vec is not None:
        v = force.vec
        uncached = force.cache == "none" or (force.split or 1) > 1
        if v not in (1, 2, 4, 8, 16) or (problem.row_len % v and not uncached):
            raise ValueError(f"vec={v} must be 1, 2, 4, 8 or 16 and, for a row cached in registers, divide "
                             f"the row length {problem.row_len}")
        if v > 1 and (FAMILIES[problem.op][0] not in (WALK_FAMILIES if uncached else VEC_FAMILIES)
                      or force.cache == "local" or (uncached and llvmpipe_loop_limited(caps))):
            raise UnsupportedOnDevice(f"vec={v}: vector runs are for softmax, norm and (uncached) scale rows "
                                      f"in registers or read from memory, not {problem.op} with "
                                      f"cache={force.cache!r}, split={force.split} on {caps.name!r}")
        _check_forced_vec(caps, problem, v)
        return v
    if cpu_rows:
        return _widest_vec(problem, _cpu_vec_bytes(caps, problem))
    if caps.device_type == "cpu" or FAMILIES[problem.op][0] not in VEC_FAMILIES:
        return 1
    if force.cache not in (None, "registers") or (force.split or 1) > 1:
        return 1
    return _widest_vec(problem, VEC_BYTES)


def _row_split(caps: DeviceCaps, problem: RowProblem, force: RowForce, cache: str, lanes: int, wg: int,
               sg_size: int | None) -> tuple[int, int]:
    """(split, chunk_len) for softmax / norms / scales: 1 and the row unless few long rows
    leave the device idle, or llvmpipe's loop limit needs shorter chunks."""
    k = problem.row_len
    teams = wg // lanes
    if force.split is not None:
        split = force.split
        if split < 1 or split > k:
            raise ValueError(f"split={split} must be between 1 and the row length {k}")
        if split > 1 and cache != "none":
            raise UnsupportedOnDevice(f"split rows are read twice: cache={cache!r} cannot be split (use cache='none')")
    elif cache == "none" and k >= ROW_SPLIT_MIN_ROW:
        want_tasks = max(1, caps.compute_units) * teams * (2 if caps.device_type == "cpu" else GPU_SPLIT_GROUPS_PER_CU)
        max_split = k // ROW_SPLIT_MIN_CHUNK
        split = max(1, min(_ceil_div(want_tasks, problem.rows), max_split))
        if caps.device_type == "gpu" and split > 1:
            split = _whole_wave_split(problem.rows, want_tasks, max_split) or split
    else:
        split = 1
    nper = _pow2_ceil(_ceil_div(k, lanes))
    if llvmpipe_loop_limited(caps) and row_trips(problem.op, cache, lanes, nper, k, 1, 0, sg_size) > LLVMPIPE_TRIP_BUDGET:
        if cache != "none":  # registers and local caches hold short rows only
            raise UnsupportedOnDevice(f"cache={cache!r} for rows of {k} exceeds llvmpipe's loop limit")
        overhead = row_trips(problem.op, "none", lanes, 1, 0, 1, 0, sg_size)
        passes = row_trips(problem.op, "none", 1, 1, 1, 1, 0, None) - row_trips(problem.op, "none", 1, 1, 0, 1, 0, None)
        # less one alignment step: chunks are rounded up to ROW_SPLIT_ALIGN below (moments of
        # 10**7 in one-lane teams, two passes with row_norm.cl's rescue, went 12 trips over)
        max_chunk = lanes * ((LLVMPIPE_TRIP_BUDGET - overhead) // passes) - ROW_SPLIT_ALIGN
        need = _ceil_div(k, max_chunk)
        if force.split is not None and force.split < need:
            raise UnsupportedOnDevice(f"split={force.split} leaves chunks of {_ceil_div(k, force.split)} elements; "
                                      f"llvmpipe's loop limit (Mesa's loop limiter) needs split >= {need} here")
        split = max(split, need)
    if split == 1:
        return 1, k
    chunk = _ceil_div(k, split)
    if force.split is None:
        chunk = _ceil_div(chunk, ROW_SPLIT_ALIGN) * ROW_SPLIT_ALIGN
    return _ceil_div(k, chunk), chunk


# GPUs: the split's tasks should fill whole waves of the groups the device holds at once (the
# planner's 4 a compute unit): 64 rows x 4194304 split 9 made 576 tasks, 528 in a first wave
# on an H100 and 48 in a second one, nearly as long, run by 9 % of the device. Split 8 (512
# tasks), CUDA events, float16 with a weight: softmax 1449 -> 1723 GB/s, layer_norm 1603 ->
# 1867, float32 +2-5 %, rms_norm level (benchmarks/rowops_param_runs_h100_2026-11-26).
SPLIT_WAVE_FILL = 0.9
# ... of GPU_SPLIT_GROUPS_PER_CU groups a compute unit. On CUDA both phases' launches ask nvcc to
# fit that many (MIN_BLOCKS, cuda_split_min_blocks): left alone it gave float32 rms_norm's and
# layer_norm's write launch (PHASE 2) 77 and 71 registers, three groups of 256 an SM, and the
# planned wave ran as a wave and a quarter. Capped at 64 (no spills), one H100, CUDA events of
# the write launch with a weight: float32 layer_norm 1 x 2^28 1150-1154 -> 1114-1116 us; float32
# rms_norm (1111-1115) and the float16 norms and softmax (64 x 4194304, 1 x 2^28) level.
GPU_SPLIT_GROUPS_PER_CU = 4


def cuda_split_min_blocks(caps: DeviceCaps, split: int, wg: int) -> int:
    """``MIN_BLOCKS`` of a CUDA split-row launch (1 for whole rows and off CUDA): the groups a
    compute unit runs at once in the split's planned wave, as many as the SM's threads allow."""
    if caps.backend != "cuda" or split < 2:
        return 1
    return min(GPU_SPLIT_GROUPS_PER_CU, _resident_blocks(caps, 1.0, wg))


def _whole_wave_split(rows: int, slots: int, max_split: int) -> int | None:
    """The smallest split from ``slots // rows`` up whose ``rows * split`` tasks fill their waves
    of ``slots`` groups to SPLIT_WAVE_FILL, within ``max_split``; None if there is none."""
    for split in range(max(1, slots // rows), max_split + 1):
        tasks = rows * split
        if tasks / (_ceil_div(tasks, slots) * slots) >= SPLIT_WAVE_FILL:
            return split
    return None


def row_variants(caps: DeviceCaps, problem: RowProblem) -> list[RowForce]:
    """Every forced variant the device can run for ``problem`` (None-free forces).

    Cache x sub-group mode (builtin, shuffle, local where the device has them) x every
    width x lanes in (1, a sub-group's width, the whole work-group), and each uncached one
    also split in three chunks (scans on CUDA: also the look-back); impossible ones (a row too
    long for registers, ...) are left out.
    """
    modes = (["builtin"] if caps.subgroup_reduce_builtins else []) + (
        ["shuffle"] if _shuffle_mode(caps) else []) + ["local"]
    sizes = tuple(caps.subgroup_sizes) if caps.subgroups else ()
    out = []
    caches = ("none",) if problem.op in SCAN_OPS else ("registers", "none") if problem.op in STATS_ONLY else CACHES
    for cache in caches:
        for mode in modes:
            for size in (sizes if mode != "local" else (None,)):
                width = size or 32
                for lanes in sorted({1, min(width, 8) // 2 or 1, width, 64, 256}):
                    wg = min(max(lanes, size or 1, 64), _pow2_floor(caps.max_work_group_size))
                    if lanes > wg:
                        continue
                    force = RowForce(cache=cache, sg_mode=mode, sg_size=size, lanes=lanes, wg_size=wg)
                    candidates = [force]
                    if problem.row_len >= 3 and (problem.op in SCAN_OPS or cache == "none"):
                        candidates.append(dataclasses.replace(force, split=3))  # partials, then the rows
                    if problem.op in SCAN_OPS and caps.backend == "cuda":
                        candidates.append(dataclasses.replace(force, lookback=True))  # one pass, tiles
                    for candidate in candidates:
                        try:
                            plan_row(caps, problem, candidate)
                        except (UnsupportedOnDevice, ValueError):
                            continue
                        out.append(candidate)
    return out
