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
 * Required macros: IN_T, OUT_T, ACC_T, ACC_BYTES, ACC_IS_FLOAT, IN_HALF, OUT_HALF, WG_SIZE,
 * LANES, SG_MODE, SG_SIZE, REQD_SG, ITEMS, SCAN, SPLIT, PHASE.
 */

/* A pointer to local memory as a function parameter: `__local` in OpenCL C; the CUDA
 * dialect header defines it empty (shared memory pointers are generic there). */
#ifndef LOCAL_PTR
#define LOCAL_PTR __local
#endif
#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3
#define SG_SHUFFLE_PTX 4
#define REQD_SG_NONE 0
#define REQD_SG_INTEL 1
#define REQD_SG_QCOM_HALF 2
#define REQD_SG_QCOM_FULL 3
#define SCAN_SUM 0
#define SCAN_PROD 1
#define SCAN_LOGADDEXP 2

#ifndef IN_T
#error "IN_T (element type read) is required"
#endif
#ifndef OUT_T
#error "OUT_T (element type written) is required"
#endif
#ifndef ACC_T
#error "ACC_T (accumulator: float, double, long, ulong) is required"
#endif
#ifndef ACC_BYTES
#error "ACC_BYTES (sizeof(ACC_T)) is required"
#endif
#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (0/1) is required"
#endif
#ifndef IN_HALF
#error "IN_HALF (0/1) is required"
#endif
#ifndef OUT_HALF
#error "OUT_HALF (0/1) is required"
#endif
#ifndef WG_SIZE
#error "WG_SIZE is required"
#endif
#ifndef LANES
#error "LANES (work-items per row) is required"
#endif
#ifndef SG_MODE
#error "SG_MODE (0 local, 1 builtin, 2 KHR shuffle, 3 qcom shuffle) is required"
#endif
#ifndef SG_SIZE
#error "SG_SIZE is required (any value with SG_MODE 0)"
#endif
#ifndef REQD_SG
#error "REQD_SG (0 none, 1 intel, 2 qcom half, 3 qcom full) is required"
#endif
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
#if PHASE == 1 && SPLIT < 2
#error "chunk totals (PHASE 1) only for split rows"
#endif

#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0 || (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two and LANES a power of two dividing it"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
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

#if SG_MODE != SG_LOCAL && FIXED_SG_SIZE && SG_SIZE != FIXED_SG_SIZE
#error "this API has one sub-group width (FIXED_SG_SIZE): SG_SIZE must equal it"
#endif
#if SG_MODE == SG_SHUFFLE_QCOM && !HAS_QCOM_SHUFFLE
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no meaning on this API: use 1 or 2"
#endif
#if SG_MODE == SG_SHUFFLE_PTX && !HAS_WORD_SHUFFLE
#error "SG_MODE 4 (NVIDIA OpenCL's inline-PTX warp shuffle) has no meaning on this API: use 1 or 2"
#endif
#if REQD_SG != REQD_SG_NONE && !HAS_REQD_SG_ATTRS
#error "this API cannot request a sub-group width: REQD_SG must be 0"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
/* (the extensions a variant needs are enabled by cl_dialect_opencl.h from these macros) */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#if REQD_SG == REQD_SG_INTEL
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG_SIZE)))
#elif REQD_SG == REQD_SG_QCOM_HALF
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("half")))
#elif REQD_SG == REQD_SG_QCOM_FULL
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("full")))
#else
#define SG_ATTR
#endif

#if IN_HALF
#define LOAD(p, i) ((ACC_T)LOAD_RO_HALF((p) + (i)))
#else
#define LOAD(p, i) ((ACC_T)LOAD_RO((p) + (i)))
#endif
#if OUT_HALF
#define STORE(v, p, i) vstore_half((float)(v), (i), (p))
#else
#define STORE(v, p, i) ((p)[i] = (OUT_T)(v))
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
#if SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shuffle_xor(ACC_T v, uint m) { return sub_group_shuffle_xor(v, m); }
#elif SG_MODE == SG_SHUFFLE_QCOM
/* cl_qcom_subgroup_shuffle moves 32-bit values; 64-bit accumulators go as two halves. */
inline ACC_T shuffle_xor(ACC_T v, uint m) {
#if ACC_BYTES == 8
    uint2 u = CAT(as_, uint2)(v);
    u.x = qcom_sub_group_shuffle_xor(u.x, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
    u.y = qcom_sub_group_shuffle_xor(u.y, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
    return CAT(as_, ACC_T)(u);
#else
    return qcom_sub_group_shuffle_xor(v, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, v);
#endif
}
#elif SG_MODE == SG_SHUFFLE_PTX
/* the dialect's 32-bit word shuffle (NVIDIA OpenCL: shfl.sync.bfly.b32); 64-bit values as two words */
inline ACC_T shuffle_xor(ACC_T v, uint m) {
#if ACC_BYTES == 8
    uint2 u = CAT(as_, uint2)(v);
    u.x = word_shuffle_xor(u.x, m);
    u.y = word_shuffle_xor(u.y, m);
    return CAT(as_, ACC_T)(u);
#else
    return CAT(as_, ACC_T)(word_shuffle_xor(CAT(as_, uint)(v), m));
#endif
}
#endif

#define SCRATCH_LEN (SG_MODE == SG_LOCAL && LANES > 1 ? WG_SIZE : 1)

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

#if SG_MODE != SG_LOCAL && LANES <= SG_SIZE
#define LANE_ID() (get_sub_group_local_id() % LANES)
#define TEAM_ID() (get_sub_group_id() * (SG_SIZE / LANES) + get_sub_group_local_id() / LANES)
#else
#define LANE_ID() (get_local_id(0) % LANES)
#define TEAM_ID() (get_local_id(0) / LANES)
#endif
#define TEAMS (WG_SIZE / LANES)
#define TILE ((ulong)LANES * ITEMS)

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void scan_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               const ulong n_rows, const ulong row_len, const ulong chunk_len,
               __global const ACC_T *restrict carries)
{
    __local ACC_T scratch[SCRATCH_LEN];
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
#if PHASE == 0
            ACC_T v[ITEMS];   /* the lane's running values; PHASE 1 needs only the total */
#endif
            ACC_T run = IDENT;
            for (uint j = 0; j < ITEMS; ++j) {
                const ulong i = first + j;
                run = OP(run, i < len ? LOAD(p, i) : IDENT);
#if PHASE == 0
                v[j] = run;
#endif
            }
            ACC_T total;
            const ACC_T excl = team_prefix(run, &total, scratch, lid, lane);
#if PHASE == 0
            const ACC_T pre = OP(carry, excl);
            for (uint j = 0; j < ITEMS; ++j) {
                const ulong i = first + j;
                if (i < len) {
                    STORE(OP(pre, v[j]), q, i);
                }
            }
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
