/* row_norm.cl: rms_norm / layer_norm of each contiguous row, or its mean and variance.
 *
 * Teams, lanes and the row cache (CACHE 0 registers / 1 local memory / 2 none) work as in
 * softmax.cl. The statistics come from one pass over the row: sums of d = x - x0 and d*d,
 * where x0 is the row's first element (a shift that keeps float32 accurate for rows with a
 * large mean) and each lane's sums are Neumaier-compensated. Then one write:
 *   NORM 0  rms_norm    y = x * rsqrt(mean(x*x) + eps) * w                  (no shift)
 *   NORM 1  layer_norm  y = ((x - x0) - mean_d) * rsqrt(var + eps) * w + b   (var: ddof 0)
 *   NORM 2  moments     stats[row] = mean, stats[n_rows + row] = var; no row written
 * w and b are ACC_T arrays of row_len elements (HAS_WEIGHT / HAS_BIAS; else 1 and 0).
 *
 * Required macros: those of softmax.cl's shared machinery (IN_T, OUT_T, ACC_T, ACC_BYTES,
 * IN_HALF, OUT_HALF, WG_SIZE, LANES, SG_MODE, SG_SIZE, REQD_SG, CACHE, NPER, LOCAL_LEN)
 * and NORM, HAS_WEIGHT, HAS_BIAS.
 */

#ifndef NORM
#error "NORM (0 rms_norm, 1 layer_norm, 2 moments) is required"
#endif
#ifndef HAS_WEIGHT
#error "HAS_WEIGHT (0/1) is required"
#endif
#ifndef HAS_BIAS
#error "HAS_BIAS (0/1) is required"
#endif
#define NORM_RMS 0
#define NORM_LAYER 1
#define NORM_MOMENTS 2
#if NORM == NORM_MOMENTS && CACHE != 2
#error "moments writes no row: CACHE must be 2"
#endif

/* ---- shared row machinery (identical in softmax.cl, row_norm.cl, row_scale.cl) ---- */
/* A pointer to local memory as a function parameter: `__local` in OpenCL C; the CUDA
 * dialect header defines it empty (shared memory pointers are generic there). */
#ifndef LOCAL_PTR
#define LOCAL_PTR __local
#endif
#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3
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

#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0 || (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two and LANES a power of two dividing it"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif

#if ACC_BYTES == 8
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#if SG_MODE == SG_SHUFFLE_QCOM
#error "the qcom shuffle moves 32-bit values: no double math with SG_MODE 3"
#endif
#endif
#if SG_MODE != SG_LOCAL && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if SG_MODE == SG_SHUFFLE_KHR
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#endif
#if SG_MODE == SG_SHUFFLE_QCOM
#pragma OPENCL EXTENSION cl_qcom_subgroup_shuffle : enable
#endif
#if REQD_SG == REQD_SG_QCOM_HALF || REQD_SG == REQD_SG_QCOM_FULL
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
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

/* Loads and stores by element index; vload_half/vstore_half need only element alignment. */
#if IN_HALF
#define LOAD(p, i) ((ACC_T)vload_half((i), (p)))
#else
#define LOAD(p, i) ((ACC_T)(p)[i])
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

/* max propagates NaN like numpy's max (fmax would drop it) */
inline ACC_T comb(ACC_T a, ACC_T b, const int kind) {
    return kind == K_SUM ? a + b : ((isnan(a) || a > b) ? a : b);
}

#if SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shuffle_xor(ACC_T v, uint m) { return sub_group_shuffle_xor(v, m); }
#elif SG_MODE == SG_SHUFFLE_QCOM
inline ACC_T shuffle_xor(ACC_T v, uint m) {
    return qcom_sub_group_shuffle_xor(v, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, v);
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
#define LANE_ID() (get_sub_group_local_id() % LANES)
#define TEAM_ID() (get_sub_group_id() * (SG_SIZE / LANES) + get_sub_group_local_id() / LANES)
#else
#define LANE_ID() (get_local_id(0) % LANES)
#define TEAM_ID() (get_local_id(0) / LANES)
#endif
/* ---- end of shared row machinery ---- */

#if HAS_WEIGHT
#define W(i) weight[i]
#else
#define W(i) ((ACC_T)1)
#endif
#if HAS_BIAS
#define B(i) bias[i]
#else
#define B(i) ((ACC_T)0)
#endif

__kernel SG_ATTR __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void norm_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               __global const ACC_T *restrict weight, __global const ACC_T *restrict bias,
               __global ACC_T *restrict stats,
               const ulong n_rows, const ulong row_len, const ACC_T eps)
{
    __local ACC_T scratch[SCRATCH_LEN];
#if CACHE == CACHE_LOCAL
    __local ACC_T rowbuf[TEAMS * LOCAL_LEN];
#endif
    const uint lid = get_local_id(0);
    const uint lane = LANE_ID();
    const uint team = TEAM_ID();
    const ulong stride = (ulong)get_num_groups(0) * TEAMS;

    /* every work-item runs the same trips; a team past the last row works on an empty row */
    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_rows; base += stride) {
        const ulong row = base + team;
        const ulong len = row < n_rows ? row_len : 0;
        __global const IN_T *p = in + in_offset + (row < n_rows ? row : 0) * row_len;
        __global OUT_T *q = out + out_offset + (row < n_rows ? row : 0) * row_len;

#if NORM == NORM_RMS
        const ACC_T x0 = 0;
#else
        const ACC_T x0 = len > 0 ? LOAD(p, 0) : (ACC_T)0;
#endif
        ACC_T s1 = 0, c1 = 0, s2 = 0, c2 = 0;
#if CACHE == CACHE_REG
        ACC_T v[NPER];
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            v[j] = i < len ? LOAD(p, i) : x0;   /* padding adds d = 0 */
            const ACC_T d = v[j] - x0;
            nsum_add(&s1, &c1, d);
            nsum_add(&s2, &c2, d * d);
        }
#else
#if CACHE == CACHE_LOCAL
        LOCAL_PTR ACC_T *c = rowbuf + team * LOCAL_LEN;
#endif
        for (ulong i = lane; i < len; i += LANES) {
            const ACC_T x = LOAD(p, i);
#if CACHE == CACHE_LOCAL
            c[i] = x;
#endif
            const ACC_T d = x - x0;
            nsum_add(&s1, &c1, d);
            nsum_add(&s2, &c2, d * d);
        }
#endif
        const ACC_T n = (ACC_T)row_len;
        const ACC_T sum2 = team_reduce(nsum_value(s2, c2), K_SUM, scratch, lid, lane);
#if NORM == NORM_RMS
        const ACC_T inv = rsqrt(sum2 / n + eps);
#define RESULT(x, i) ((x) * inv * W(i))
#else
        const ACC_T mean_d = team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane) / n;
        /* clamp rounding below zero; fmax would also turn a NaN variance into 0, so NaN
         * (a NaN or inf in the row) is carried past it */
        const ACC_T var_d = sum2 / n - mean_d * mean_d;
        const ACC_T var_ = isnan(var_d) ? var_d : fmax(var_d, (ACC_T)0);
        const ACC_T mean = x0 + mean_d;
#if NORM == NORM_MOMENTS
        if (lane == 0 && row < n_rows) {
            stats[row] = mean;
            stats[n_rows + row] = var_;
        }
#else
        const ACC_T inv = rsqrt(var_ + eps);
/* (x - x0) - mean_d: both differences are small next to x, so a large mean cancels exactly */
#define RESULT(x, i) ((((x) - x0) - mean_d) * inv * W(i) + B(i))
#endif
#endif

#if NORM != NORM_MOMENTS
#if CACHE == CACHE_REG
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            if (i < len) {
                STORE(RESULT(v[j], i), q, i);
            }
        }
#elif CACHE == CACHE_LOCAL
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT(c[i], i), q, i);
        }
#else
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT(LOAD(p, i), i), q, i);
        }
#endif
#endif
    }
}
