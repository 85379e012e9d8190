"""Launch shapes measured on NVIDIA GPUs, for every way clreduce runs there.

The CUDA backend and NVIDIA's OpenCL driver run the same kernels on the same hardware, so the
planner (``clreduce.plan``) applies these rules to any ``DeviceCaps`` whose hardware is an
NVIDIA GPU, whatever the API. Pure: no device, no GPU library. ``clreduce tune`` can still
replace any of these choices per shape bucket (``Force.lanes``, ``Force.unroll``,
``Force.split``), on either backend.

Numbers come from ``tools/bench_cuda.py --sweep`` on an H200 (132 SMs; GB/s planner ->
these rules): float32 16777216x16 3416 -> 4032, 1048576x32 3346 -> 3687; float16 1048576x32
3121 -> 3407, 65536x4096 4271 -> 4464, 8192x1000 2041 -> 2207; split-K float32 64x4194304
4148 -> 4443, 1x268435456 4265 -> 4441 (others within 1-2 % of the best found). float16
rows of 1-6 KB were re-swept on an H100, which preferred half the lanes (vectors_per_lane).
"""

from __future__ import annotations

# Split-K: chunks of about SPLIT_CHUNK_BYTES, and at least SPLIT_MIN_TASKS_PER_SM chunk tasks
# (one block each) per SM; SPLIT_UNROLL vector loads in flight per lane.
SPLIT_CHUNK_BYTES = 512 * 1024
SPLIT_MIN_TASKS_PER_SM = 12
SPLIT_UNROLL = 8
SPLIT_MIN_CHUNK = 8192


def nvidia_gpu(caps) -> bool:
    """The hardware is an NVIDIA GPU (CUDA backend or NVIDIA's OpenCL driver)."""
    return caps.vendor == "nvidia" and caps.device_type == "gpu"


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def vectors_per_lane(row_bytes: int, itemsize: int) -> int:
    """Vector loads each lane of a row team makes, by row length in bytes.

    Short rows want narrow teams with a few loads each (more rows per warp, fewer shuffle
    steps), rows of ~1-8 KB a half-warp or so, long rows a block per row; 2- and 1-byte
    types convert more values per load and prefer fewer lanes.
    """
    if itemsize >= 4:
        return 2 if row_bytes <= 128 else 4 if row_bytes <= 1024 else 16 if row_bytes <= 8192 else 4
    if itemsize == 2 and 1024 < row_bytes <= 6144:
        # float16 rows of 1-6 KB want half the lanes of the 8-load rule: H100 sweep at 65536
        # rows (benchmarks/nvidia_pool_midrows_h100_2026-11-23/), old -> new GB/s: K=1000
        # 2574 -> 2607, 2000 2374 -> 2689, 3000 2644 -> 2841, 1536 2975 -> 2937 (-1.3 %)
        return 16
    return 4 if row_bytes <= 1024 else 8 if row_bytes <= 8192 else 4


def unroll_for(vectors: int) -> int:
    """Vector loads in flight per lane (``UNROLL``) for a lane that makes ``vectors`` loads."""
    if vectors >= 32:
        return 8
    return max(1, min(4, _pow2_floor(vectors)))


def row_team(row_len: int, itemsize: int, vec: int, wg: int, arg: bool = False) -> tuple[int, int]:
    """(lanes per row, UNROLL) for a single-pass row plan.

    argmax/argmin teams on short rows (up to 128 bytes, or 256 bytes of 2-byte values) get half
    the lanes (twice the loads each): their butterfly moves three words per step, and the
    sweep on an H100 preferred fewer steps there (float32 1048576x32 2353 -> 2566 GB/s,
    16777216x16 2598 -> 2665; float16 4194304x64 1995 -> 2176, 442368x128 1834 -> 1932) but
    not on longer rows (float32 4194304x64 2836 -> 2734).
    """
    row_bytes = row_len * itemsize
    short = row_bytes <= 128 or (itemsize <= 2 and row_bytes <= 256)
    per_lane = vectors_per_lane(row_bytes, itemsize) * (2 if arg and short else 1)
    lanes = max(1, min(wg, _pow2_floor(_ceil_div(row_len, vec * per_lane))))
    return lanes, unroll_for(_ceil_div(row_len, vec * lanes))


def split_count(rows: int, row_len: int, itemsize: int, compute_units: int) -> int:
    """Chunks per row for a split-K plan (at least 2)."""
    split = max(_ceil_div(SPLIT_MIN_TASKS_PER_SM * max(1, compute_units), rows),
                _ceil_div(row_len * itemsize, SPLIT_CHUNK_BYTES))
    return max(2, min(split, row_len // SPLIT_MIN_CHUNK))
