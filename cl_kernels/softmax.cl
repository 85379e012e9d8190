/* softmax.cl: softmax / log_softmax of each contiguous row of a (rows, row_len) array.
 *
 * Teams of LANES work-items own one row each (several teams per sub-group for short rows,
 * one work-group per row for long ones) and walk the rows with a grid stride. A lane owns
 * the row elements lane, lane + LANES, lane + 2*LANES, ... so neighbouring lanes read
 * neighbouring addresses. CACHE picks where a lane keeps its elements between the passes:
 *   CACHE 0  registers: a private array of NPER floats (row read once)
 *   CACHE 1  local memory: LOCAL_LEN floats per team (row read once); a lane reads back
 *            only what it wrote itself, so the row buffer needs no barrier
 *   CACHE 2  none: max, sum and write each read the row from global memory (three passes)
 * Math is in ACC_T (float for half input); the shift follows scipy.special:
 *   softmax      y = exp(x - m) / sum(exp(x - m)),      m = max(x)   (NaN propagates)
 *   log_softmax  y = (x - s) - log(sum(exp(x - s))),    s = m if finite else 0
 * so a row holding NaN or +inf, or only -inf, gives NaN (log_softmax: see README).
 *
 * Required macros: IN_T, OUT_T, ACC_T, ACC_BYTES, IN_HALF, OUT_HALF, WG_SIZE, LANES, SG_MODE, SG_SIZE,
 * REQD_SG, CACHE, NPER, LOCAL_LEN, LOG.
 */

#ifndef LOG
#error "LOG (0 softmax, 1 log_softmax) is required"
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

__kernel SG_ATTR __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void softmax_rows(__global const IN_T *restrict in, const ulong in_offset,
                  __global OUT_T *restrict out, const ulong out_offset,
                  const ulong n_rows, const ulong row_len)
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

        ACC_T m = -INFINITY;
#if CACHE == CACHE_REG
        ACC_T v[NPER];
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            v[j] = i < len ? LOAD(p, i) : (ACC_T)(-INFINITY);
            m = comb(m, v[j], K_MAX);
        }
#elif CACHE == CACHE_LOCAL
        LOCAL_PTR ACC_T *c = rowbuf + team * LOCAL_LEN;
        for (ulong i = lane; i < len; i += LANES) {
            const ACC_T x = LOAD(p, i);
            c[i] = x;
            m = comb(m, x, K_MAX);
        }
#else
        for (ulong i = lane; i < len; i += LANES) {
            m = comb(m, LOAD(p, i), K_MAX);
        }
#endif
        m = team_reduce(m, K_MAX, scratch, lid, lane);
#if LOG
        const ACC_T shift = isfinite(m) ? m : (ACC_T)0;
#else
        const ACC_T shift = m;
#endif

        ACC_T s = 0, comp = 0;
/* softmax keeps exp(x - shift) in the cache, so each element's exp is computed once */
#if CACHE == CACHE_REG
        for (uint j = 0; j < NPER; ++j) {
            if (lane + (ulong)j * LANES < len) {
                const ACC_T e = exp(v[j] - shift);
                nsum_add(&s, &comp, e);
#if !LOG
                v[j] = e;
#endif
            }
        }
#elif CACHE == CACHE_LOCAL
        for (ulong i = lane; i < len; i += LANES) {
            const ACC_T e = exp(c[i] - shift);
            nsum_add(&s, &comp, e);
#if !LOG
            c[i] = e;
#endif
        }
#else
        for (ulong i = lane; i < len; i += LANES) {
            nsum_add(&s, &comp, exp(LOAD(p, i) - shift));
        }
#endif
        s = team_reduce(nsum_value(s, comp), K_SUM, scratch, lid, lane);
#if LOG
        const ACC_T ls = log(s);
#define RESULT(x) (((x) - shift) - ls)
#define RESULT_CACHED(x) RESULT(x)
#else
#define RESULT(x) (exp((x) - shift) / s)
#define RESULT_CACHED(e) ((e) / s)
#endif

#if CACHE == CACHE_REG
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            if (i < len) {
                STORE(RESULT_CACHED(v[j]), q, i);
            }
        }
#elif CACHE == CACHE_LOCAL
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT_CACHED(c[i]), q, i);
        }
#else
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT(LOAD(p, i)), q, i);
        }
#endif
    }
}
