/* row_common.h: the row machinery softmax.cl, row_norm.cl and row_scale.cl share: macro checks,
 * teams of LANES work-items per row, the team reduce (one per SG_MODE behind one name),
 * compensated sums, element loads/stores, and the task decomposition of split rows.
 *
 * The kernel files `#include "row_common.h"`; clreduce/kernels.py splices this text in
 * where the include stands (the program is one string, so the source hash and the program
 * caches see this file too, and no include path is needed at build time).
 *
 * Required macros: IN_T, OUT_T, ACC_T, ACC_BYTES, ACC_IS_FLOAT, IN_HALF, OUT_HALF, WG_SIZE,
 * LANES, SG_MODE (0 local, 1 builtin, 2 KHR, 3 qcom, 4 NVIDIA OpenCL PTX shuffle), SG_SIZE,
 * REQD_SG, CACHE, NPER, LOCAL_LEN, SPLIT, PHASE.
 * Optional: MIN_BLOCKS (CUDA's __launch_bounds__ second argument, default 1).
 *
 * Tasks. A task is one row (SPLIT 1) or one of SPLIT chunks of chunk_len elements of a row
 * (task t: row t / SPLIT, chunk t % SPLIT). Teams walk the n_rows * SPLIT tasks with a grid
 * stride; every work-item of a group runs the same number of trips (a team past the last
 * task works on an empty chunk), so barriers and sub-group collectives stay uniform.
 *   PHASE 0  SPLIT 1: the whole row in one launch (statistics, then the write)
 *   PHASE 1  SPLIT > 1: each task writes its chunk's partial statistics, two ACC_T values,
 *            to partials[2 * task], partials[2 * task + 1]
 *   PHASE 2  SPLIT > 1: each team folds its row's SPLIT partials, then writes its chunk
 * Split rows are read again in phase 2: CACHE must be 2 (none) there.
 */
#ifndef ROW_COMMON_H
#define ROW_COMMON_H

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
#define CACHE_REG 0
#define CACHE_LOCAL 1
#define CACHE_NONE 2
#define K_SUM 0
#define K_MAX 1

#ifndef IN_T
#error "IN_T (element type read) is required"
#endif
#ifndef OUT_T
#error "OUT_T (element type written) is required"
#endif
#ifndef ACC_T
#error "ACC_T (math type: float, or double for double input) is required"
#endif
#ifndef ACC_BYTES
#error "ACC_BYTES (4 float, 8 double) is required"
#endif
#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (1: the row ops compute in float or double) is required"
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
#ifndef CACHE
#error "CACHE (0 registers, 1 local memory, 2 none) is required"
#endif
#ifndef NPER
#error "NPER (elements per lane cached in registers; any value unless CACHE 0) is required"
#endif
#ifndef LOCAL_LEN
#error "LOCAL_LEN (elements per team cached in local memory; any value unless CACHE 1) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row; 1 = whole rows) is required"
#endif
#ifndef PHASE
#error "PHASE (0 whole rows, 1 chunk partials, 2 apply from partials) is required"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#if ACC_IS_FLOAT != 1
#error "the row ops compute in float or double: ACC_IS_FLOAT must be 1"
#endif
#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0 || (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two and LANES a power of two dividing it"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#if ACC_BYTES == 8 && SG_MODE == SG_SHUFFLE_QCOM
#error "the qcom shuffle moves 32-bit values: no double math with SG_MODE 3"
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
#if (PHASE == 0) != (SPLIT == 1) || PHASE < 0 || PHASE > 2
#error "PHASE 0 goes with SPLIT 1; PHASE 1 and 2 with SPLIT > 1"
#endif
#if SPLIT > 1 && CACHE != CACHE_NONE
#error "split rows are read again in phase 2: CACHE must be 2 (none)"
#endif

#if REQD_SG == REQD_SG_INTEL
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG_SIZE)))
#elif REQD_SG == REQD_SG_QCOM_HALF
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("half")))
#elif REQD_SG == REQD_SG_QCOM_FULL
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("full")))
#else
#define SG_ATTR
#endif

/* Loads and stores by element index. The input is never written during a launch (LOAD_RO:
 * the read-only cache on CUDA); vload_half/vstore_half need only element alignment. */
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

#define TEAMS (WG_SIZE / LANES)
#if SG_MODE == SG_LOCAL
#define SCRATCH_LEN WG_SIZE
#else
#define SCRATCH_LEN (WG_SIZE / SG_SIZE)
#endif

/* max propagates NaN like numpy's max (fmax would drop it). A function, so a shuffle passed
 * as an argument runs in every lane. */
inline ACC_T comb(const ACC_T a, const ACC_T b, const int kind) {
    return kind == K_SUM ? a + b : ((isnan(a) || a > b) ? a : b);
}

#if SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shuffle_xor(ACC_T v, uint m) { return sub_group_shuffle_xor(v, m); }
#elif SG_MODE == SG_SHUFFLE_QCOM
inline ACC_T shuffle_xor(ACC_T v, uint m) {
    return qcom_sub_group_shuffle_xor(v, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, v);
}
#elif SG_MODE == SG_SHUFFLE_PTX
/* the dialect's 32-bit word shuffle (NVIDIA OpenCL: shfl.sync.bfly.b32); double as two words */
#define ROW_CAT_(a, b) a##b
#define ROW_CAT(a, b) ROW_CAT_(a, b)
inline ACC_T shuffle_xor(ACC_T v, uint m) {
#if ACC_BYTES == 8
    uint2 u = as_uint2(v);
    u.x = word_shuffle_xor(u.x, m);
    u.y = word_shuffle_xor(u.y, m);
    return ROW_CAT(as_, ACC_T)(u);
#else
    return ROW_CAT(as_, ACC_T)(word_shuffle_xor(as_uint(v), m));
#endif
}
#endif

#if SG_MODE != SG_LOCAL
/* Reduce over aligned groups of `width` lanes of a sub-group; every lane gets the value.
 * The built-in covers the whole sub-group (width == SG_SIZE); xor masks below `width`
 * stay inside the group, so several rows share a sub-group in the shuffle modes. */
inline ACC_T sg_reduce(ACC_T v, const int kind, const uint width) {
#if SG_MODE == SG_BUILTIN
    if (kind == K_SUM) {
        return sub_group_reduce_add(v);
    }
    const ACC_T r = sub_group_reduce_max(v);
    return sub_group_any(isnan(v)) ? (ACC_T)NAN : r;  /* the built-in leaves NaN unspecified */
#else
    for (uint m = width >> 1; m > 0; m >>= 1) {
        v = comb(v, shuffle_xor(v, m), kind);
    }
    return v;
#endif
}
#endif

/* Reduce `v` over the team; every lane of the team gets the result. Called by every
 * work-item of the group the same number of times (it may hold barriers). */
inline ACC_T team_reduce(ACC_T v, const int kind, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
#if LANES == 1
    return v;
#elif SG_MODE == SG_LOCAL
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = LANES >> 1; s > 0; s >>= 1) {
        if (lane < s) {
            scratch[lid] = comb(scratch[lid], scratch[lid + s], kind);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    v = scratch[lid - lane];
    barrier(CLK_LOCAL_MEM_FENCE);  /* the next reduce overwrites scratch */
    return v;
#elif LANES <= SG_SIZE
    return sg_reduce(v, kind, LANES);
#else
    /* Work-group teams: each sub-group reduces, lane 0 parks the partial, every lane folds
     * its team's partials in the same order (so all lanes agree bit for bit). */
    v = sg_reduce(v, kind, SG_SIZE);
    if (get_sub_group_local_id() == 0) {
        scratch[get_sub_group_id()] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint first = (lid - lane) / SG_SIZE;
    ACC_T r = scratch[first];
    for (uint j = 1; j < LANES / SG_SIZE; ++j) {
        r = comb(r, scratch[first + j], kind);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#endif
}

/* Neumaier's compensated sum: (s, c) carry the running sum and the rounding error of
 * every step, so a lane's sum of a long row stays accurate in float32. A non-finite sum
 * keeps its IEEE value (the compensation of inf - inf would turn it into NaN). */
inline void nsum_add(ACC_T *s, ACC_T *c, const ACC_T x) {
    const ACC_T t = *s + x;
    *c += fabs(*s) >= fabs(x) ? (*s - t) + x : (x - t) + *s;
    *s = t;
}
inline ACC_T nsum_value(const ACC_T s, const ACC_T c) { return isfinite(s) ? s + c : s; }

/* Lane and team of this work-item. With sub-groups and LANES <= SG_SIZE a team is an
 * aligned lane group of one sub-group, named by sub-group ids so that the butterfly's
 * partners are exactly the team's lanes. */
#if SG_MODE != SG_LOCAL && LANES <= SG_SIZE
#define LANE_ID() ((uint)get_sub_group_local_id() % LANES)
#define TEAM_ID() ((uint)get_sub_group_id() * (SG_SIZE / LANES) + (uint)get_sub_group_local_id() / LANES)
#else
#define LANE_ID() ((uint)get_local_id(0) % LANES)
#define TEAM_ID() ((uint)get_local_id(0) / LANES)
#endif

/* Where task `task` lies: its row, the first element of its chunk, and its length (0 for a
 * team past the last task). The planner never makes an empty chunk. */
inline ulong task_len(const ulong task, const ulong n_rows, const ulong row_len, const ulong chunk_len,
                      ulong *row, ulong *start) {
    const int live = task < n_rows * SPLIT;
    *row = live ? task / SPLIT : 0;
    *start = live ? (task % SPLIT) * chunk_len : 0;
    return live ? min(chunk_len, row_len - *start) : 0;
}

/* Value k (0/1) of chunk j's partial statistics of `row` (phases 1 and 2). */
#if SPLIT > 1
#define PARTIAL(row, j, k) partials[2 * ((row) * SPLIT + (j)) + (k)]
#endif

#endif /* ROW_COMMON_H */
