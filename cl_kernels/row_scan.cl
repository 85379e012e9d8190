/* row_scan.cl: inclusive scans (cumsum, cumprod, logcumsumexp) of each contiguous row.
 *
 * Teams of LANES work-items own one row each and walk it in tiles of LANES * ITEMS
 * elements: lane l scans its ITEMS consecutive elements in registers, the team turns the
 * lane totals into exclusive prefixes, each lane adds its prefix and the carry of the
 * earlier tiles and writes, and the carry grows by the tile's total. Every team of a group
 * runs ceil(row_len / tile) tiles (teams past the last row with nothing to load), so the
 * barriers and sub-group collectives inside are reached by the whole group.
 *
 * Team prefix (SG_MODE):
 *   1 builtin        sub_group_scan_exclusive_add + sub_group_reduce_add (sums, LANES == SG_SIZE)
 *   2/3/4 shuffle    xor butterfly over aligned groups of LANES lanes (LANES <= SG_SIZE):
 *                    at each level the upper half adds the lower half's block total
 *                    (the standard butterfly prefix; only xor shuffles are needed)
 *   0 local          Hillis-Steele steps in __local scratch[WG_SIZE] (any LANES)
 *
 * Long rows, few of them (reduce-then-scan over work-groups): SPLIT > 1 cuts each row into
 * SPLIT chunks of chunk_len elements, one task per team. Three launches:
 *   PHASE 1  each task writes its chunk's total to out[task]          (OUT_T = ACC_T)
 *   (a SPLIT 1 scan of those (n_rows, SPLIT) totals, inclusive, into `carries`)
 *   PHASE 0  each task scans its chunk starting from carries[task - 1] (chunk > 0)
 * With SPLIT 1, PHASE 0 scans whole rows (chunk_len = row_len) and `carries` is unused.
 *
 * SCAN: 0 sum, 1 prod, 2 logaddexp (float only). Integer inputs accumulate in 64 bits
 * (ACC_T long/ulong: exact, wrapping like numpy); half input accumulates in float.
 *
 * Required macros: those of team_common.h, and ITEMS, SCAN, SPLIT, PHASE.
 */

/* team_common.h: sub-group modes, API checks, shuffle, LOAD/STORE, lanes and teams */
#include "team_common.h"

#define SCAN_SUM 0
#define SCAN_PROD 1
#define SCAN_LOGADDEXP 2

#ifndef ITEMS
#error "ITEMS (consecutive elements a lane scans per tile) is required"
#endif
#ifndef SCAN
#error "SCAN (0 sum, 1 prod, 2 logaddexp) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row, 1 = whole rows) is required"
#endif
#ifndef PHASE
#error "PHASE (0 scan, 1 chunk totals) is required"
#endif
#if ITEMS != 1 && ITEMS != 2 && ITEMS != 4 && ITEMS != 8 && ITEMS != 16
#error "ITEMS must be 1, 2, 4, 8 or 16 (one vector access per lane and tile)"
#endif
#if PHASE == 1 && SPLIT < 2
#error "chunk totals (PHASE 1) only for split rows"
#endif

#if (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two"
#endif
#if SG_MODE == SG_BUILTIN && (LANES != SG_SIZE || SCAN != SCAN_SUM)
#error "the built-in scan is a whole-sub-group sum: LANES == SG_SIZE and SCAN 0 only"
#endif
#if SG_MODE != SG_LOCAL && SG_MODE != SG_BUILTIN && LANES > SG_SIZE
#error "shuffle scans stay inside one sub-group: LANES <= SG_SIZE (use SG_MODE 0 above)"
#endif
#if SCAN == SCAN_LOGADDEXP && !ACC_IS_FLOAT
#error "logaddexp needs a float accumulator"
#endif

/* ---- the op ------------------------------------------------------------------------------ */
#if SCAN == SCAN_SUM
#define IDENT ((ACC_T)0)
#define OP(a, b) ((a) + (b))
#elif SCAN == SCAN_PROD
#define IDENT ((ACC_T)1)
#define OP(a, b) ((a) * (b))
#else
#define IDENT ((ACC_T)(-INFINITY))
/* log(exp(a) + exp(b)) as numpy's logaddexp: -inf is neutral, NaN propagates, +inf wins */
inline ACC_T logaddexp(const ACC_T a, const ACC_T b) {
    if (isnan(a) || isnan(b)) {
        return a + b;
    }
    const ACC_T m = a > b ? a : b;
    if (isinf(m)) {
        return m;
    }
    return m + log1p(exp(-fabs(a - b)));
}
#define OP(a, b) logaddexp((a), (b))
#endif

/* ---- team prefix: exclusive prefix of each lane's total and the team's total ---------------- */
#define PREFIX_SCRATCH_LEN (SG_MODE == SG_LOCAL && LANES > 1 ? WG_SIZE : 1)

inline ACC_T team_prefix(const ACC_T t, ACC_T *total, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
#if LANES == 1
    *total = t;
    return IDENT;
#elif SG_MODE == SG_BUILTIN
    *total = sub_group_reduce_add(t);
    return sub_group_scan_exclusive_add(t);
#elif SG_MODE == SG_SHUFFLE_KHR || SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX
    /* Each lane holds the total of its aligned block of 2m lanes and the part of it that
     * lies before the lane; blocks double at every level. */
    ACC_T block = t, before = IDENT;
    for (uint m = 1; m < LANES; m <<= 1) {
        const ACC_T other = shuffle_xor(block, m);
        if (lane & m) {
            before = OP(other, before);
            block = OP(other, block);
        } else {
            block = OP(block, other);
        }
    }
    *total = block;
    return before;
#else
    /* Hillis-Steele inclusive scan over the team's slots; read, barrier, write, barrier */
    scratch[lid] = t;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < LANES; off <<= 1) {
        const ACC_T mine = scratch[lid];
        const ACC_T lower = lane >= off ? scratch[lid - off] : IDENT;
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] = OP(lower, mine);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ACC_T excl = lane > 0 ? scratch[lid - 1] : IDENT;
    *total = scratch[lid - lane + LANES - 1];
    barrier(CLK_LOCAL_MEM_FENCE);  /* the next tile overwrites scratch */
    return excl;
#endif
}

#define TILE ((ulong)LANES * ITEMS)

/* A lane's ITEMS consecutive elements of a tile: one ITEMS-wide access where they lie wholly
 * in the task at an address aligned for it (VLOAD_ALIGNED; always on OpenCL), else element by
 * element, IDENT past the end. Element accesses, lanes ITEMS elements apart, had held an H100's
 * float32 cumsum to ~45 % of copy (each warp access touched 32 sectors for 4 bytes each). */
#if IN_HALF
#define SCAN_RAW_T float
#define SCAN_VLOAD(p, d) VLOAD_HALF_ARRAY(ITEMS, p, d)
#else
#define SCAN_RAW_T IN_T
#define SCAN_VLOAD(p, d) VLOAD_ARRAY(ITEMS, p, d)
#endif
#if OUT_HALF
#define SCAN_VSTORE(d, q) VSTORE_HALF_ARRAY(ITEMS, d, q)
#else
#define SCAN_VSTORE(d, q) VSTORE_ARRAY(ITEMS, d, q)
#endif
inline void load_items(__global const IN_T *p, const ulong first, const ulong len, ACC_T *d) {
    if (first + ITEMS <= len && VLOAD_ALIGNED(p + first, ITEMS)) {
        SCAN_RAW_T raw[ITEMS];
        SCAN_VLOAD(p + first, raw);
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = (ACC_T)raw[j];
        }
    } else {
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = first + j < len ? LOAD(p, first + j) : IDENT;
        }
    }
}
#if PHASE == 0
inline void store_items(const ACC_T *d, __global OUT_T *q, const ulong first, const ulong len) {
    if (first + ITEMS <= len && VLOAD_ALIGNED(q + first, ITEMS)) {
        SCAN_VSTORE(d, q + first);
    } else {
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            if (first + j < len) {
                STORE(d[j], q, first + j);
            }
        }
    }
}
#endif

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void scan_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               const ulong n_rows, const ulong row_len, const ulong chunk_len,
               __global const ACC_T *restrict carries)
{
    __local ACC_T scratch[PREFIX_SCRATCH_LEN];
    const uint lid = get_local_id(0);
    const uint lane = LANE_ID();
    const uint team = TEAM_ID();
    const ulong n_tasks = n_rows * SPLIT;
    const ulong stride = (ulong)get_num_groups(0) * TEAMS;

    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_tasks; base += stride) {
        const ulong task = base + team;
        const bool live = task < n_tasks;
        const ulong row = live ? task / SPLIT : 0;
        const ulong start = live ? (task % SPLIT) * chunk_len : 0;
        /* the planner never makes an empty chunk: start < row_len for live tasks */
        const ulong len = live ? min(chunk_len, row_len - start) : 0;
        __global const IN_T *p = in + in_offset + row * row_len + start;
#if PHASE == 0
        __global OUT_T *q = out + out_offset + row * row_len + start;
#endif
        ACC_T carry = IDENT;
#if SPLIT > 1 && PHASE == 0
        if (live && task % SPLIT > 0) {
            carry = carries[task - 1];
        }
#endif
        for (ulong t0 = 0; t0 < chunk_len; t0 += TILE) {   /* uniform trip count: chunk_len */
            const ulong first = t0 + (ulong)lane * ITEMS;
            ACC_T v[ITEMS];   /* the lane's elements, then its running values */
            load_items(p, first, len, v);
            ACC_T run = IDENT;
            UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
                run = OP(run, v[j]);
                v[j] = run;
            }
            ACC_T total;
            const ACC_T excl = team_prefix(run, &total, scratch, lid, lane);
#if PHASE == 0
            const ACC_T pre = OP(carry, excl);
            UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
                v[j] = OP(pre, v[j]);
            }
            store_items(v, q, first, len);
#endif
            carry = OP(carry, total);
        }
#if PHASE == 1
        if (lane == 0 && live) {
            out[out_offset + task] = carry;
        }
#endif
    }
}
