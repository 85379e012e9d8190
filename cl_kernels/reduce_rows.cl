/* reduce_rows.cl: reduce each contiguous row of a (rows, row_len) array to one value.
 *
 * A work-group of WG_SIZE work-items is cut into teams of LANES work-items; a team
 * reduces one row (or, with SPLIT > 1, one chunk of a row) at a time and the teams
 * walk the rows with a grid stride. LANES picks the strategy:
 *   LANES <  SG_SIZE  several rows per sub-group (masked butterfly inside the team)
 *   LANES == SG_SIZE  one sub-group per row
 *   LANES >  SG_SIZE  one work-group per row (sub-group partials through local memory)
 * With SG_MODE == SG_LOCAL there are no sub-groups and teams reduce in local memory.
 *
 * Every work-item of a group runs the same number of loop trips, so barriers and
 * sub-group collectives are always reached by the whole group / sub-group; teams past
 * the last row take part with the identity.
 *
 * Required macros (see cl_kernels/README.md): one of OP_SUM, OP_PROD, OP_MAX, OP_MIN,
 * OP_NANMAX, OP_NANMIN; MAP, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT, ACC_BYTES, IDENTITY, WG_SIZE,
 * LANES, VEC, SPLIT, SG_MODE, SG_SIZE, REQD_SG, FINALIZE, IN_HALF, OUT_HALF.
 */

#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3

#define REQD_SG_NONE 0
#define REQD_SG_INTEL 1
#define REQD_SG_QCOM_HALF 2
#define REQD_SG_QCOM_FULL 3

#define MAP_NONE 0
#define MAP_ABS 1
#define MAP_SQUARE 2
#define MAP_NONZERO 3
#define MAP_NOTNAN 4
#define MAP_NAN_TO_ZERO 5
#define MAP_ONE 6
#define FIN_NONE 0
#define FIN_MEAN 1
#define FIN_SQRT 2

#if !defined(OP_SUM) && !defined(OP_PROD) && !defined(OP_MAX) && !defined(OP_MIN) && !defined(OP_NANMAX) && !defined(OP_NANMIN)
#error "define one of OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_NANMAX, OP_NANMIN"
#endif
#ifndef MAP
#error "MAP (0 none, 1 abs, 2 square, 3 nonzero, 4 not-nan, 5 nan-to-zero, 6 one) is required"
#endif
#ifndef IN_T
#error "IN_T (element type read) is required"
#endif
#ifndef ACC_T
#error "ACC_T (accumulator type) is required"
#endif
#ifndef OUT_T
#error "OUT_T (element type written) is required"
#endif
#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (0/1) is required"
#endif
#ifndef ACC_BYTES
#error "ACC_BYTES (sizeof(ACC_T)) is required"
#endif
#ifndef IDENTITY
#error "IDENTITY (neutral value of the op in ACC_T) is required"
#endif
#ifndef WG_SIZE
#error "WG_SIZE is required"
#endif
#ifndef LANES
#error "LANES (work-items per row) is required"
#endif
#ifndef VEC
#error "VEC (elements per vector load: 1, 2, 4, 8, 16) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row, 1 = no split) is required"
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
#ifndef FINALIZE
#error "FINALIZE (0 none, 1 mean, 2 sqrt) is required"
#endif
#ifndef IN_HALF
#error "IN_HALF (0/1) is required"
#endif
#ifndef OUT_HALF
#error "OUT_HALF (0/1) is required"
#endif

#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && (defined(OP_PROD) || defined(OP_NANMAX) || defined(OP_NANMIN))
#error "no sub-group built-in for prod, and built-in max/min leave NaN unspecified: use a shuffle mode"
#endif

#if ACC_BYTES == 8 && ACC_IS_FLOAT
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
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

/* ---- the op ------------------------------------------------------------------------ */
/* max/min propagate NaN like numpy (fmax/fmin would drop it). Scalars use ?:; vectors use
 * select(), whose vector mask is the sign bit that relational built-ins set. */
#if defined(OP_SUM)
#define COMBINE(a, b) ((a) + (b))
#define COMBINE_V(a, b) ((a) + (b))
#elif defined(OP_PROD)
#define COMBINE(a, b) ((a) * (b))
#define COMBINE_V(a, b) ((a) * (b))
#elif defined(OP_NANMAX)
#define COMBINE(a, b) fmax((a), (b))
#define COMBINE_V(a, b) fmax((a), (b))
#elif defined(OP_NANMIN)
#define COMBINE(a, b) fmin((a), (b))
#define COMBINE_V(a, b) fmin((a), (b))
#elif ACC_IS_FLOAT && defined(OP_MAX)
#define COMBINE(a, b) ((isnan(a) || (a) > (b)) ? (a) : (b))
#define COMBINE_V(a, b) select((b), (a), isgreater((a), (b)) | isnan(a))
#elif ACC_IS_FLOAT && defined(OP_MIN)
#define COMBINE(a, b) ((isnan(a) || (a) < (b)) ? (a) : (b))
#define COMBINE_V(a, b) select((b), (a), isless((a), (b)) | isnan(a))
#elif defined(OP_MAX)
#define COMBINE(a, b) max((a), (b))
#define COMBINE_V(a, b) max((a), (b))
#else
#define COMBINE(a, b) min((a), (b))
#define COMBINE_V(a, b) min((a), (b))
#endif

/* ---- loads: IN_T -> mapped -> ACC_T, VEC elements at a time --------------------------- */
/* vloadn/vload_halfn need only element alignment, so rows starting anywhere are fine.
 * MAP runs on the loaded type (float for half input) before the conversion to ACC_T, so
 * "nonzero" sees 0.5 as nonzero even when ACC_T is an integer. */
#if IN_HALF
#define RAW_T float
#define LOAD_RAW_1(p) vload_half(0, (p))
#define LOAD_RAW_V(p) CAT(vload_half, VEC)(0, (p))
#else
#define RAW_T IN_T
#define LOAD_RAW_1(p) (*(p))
#define LOAD_RAW_V(p) CAT(vload, VEC)(0, (p))
#endif
#define RAW_V CAT(RAW_T, VEC)

#if MAP == MAP_NONE
#define MAP_1(x) (x)
#define MAP_V(x) (x)
#elif MAP == MAP_ABS
#define MAP_1(x) fabs(x)
#define MAP_V(x) fabs(x)
#elif MAP == MAP_SQUARE
#define MAP_1(x) ((x) * (x))
#define MAP_V(x) ((x) * (x))
#elif MAP == MAP_NONZERO
#define MAP_1(x) ((x) != (RAW_T)0 ? (RAW_T)1 : (RAW_T)0)
#define MAP_V(x) select((RAW_V)0, (RAW_V)1, (x) != (RAW_V)0)
#elif MAP == MAP_NOTNAN
#define MAP_1(x) (isnan(x) ? (RAW_T)0 : (RAW_T)1)
#define MAP_V(x) select((RAW_V)1, (RAW_V)0, isnan(x))
#elif MAP == MAP_NAN_TO_ZERO
#define MAP_1(x) (isnan(x) ? (RAW_T)0 : (x))
#define MAP_V(x) select((x), (RAW_V)0, isnan(x))
#elif MAP == MAP_ONE
#define MAP_1(x) ((RAW_T)1)
#define MAP_V(x) ((RAW_V)1)
#endif

#define LOAD_1(p) ((ACC_T)MAP_1(LOAD_RAW_1(p)))
#if VEC == 1
#define ACC_V ACC_T
#define LOAD_V(p) LOAD_1(p)
#define HREDUCE(v) (v)
#undef COMBINE_V
#define COMBINE_V(a, b) COMBINE(a, b)  /* select() has no scalar double/int overload */
#else
#define ACC_V CAT(ACC_T, VEC)
#define LOAD_V(p) CAT(convert_, ACC_V)(MAP_V(LOAD_RAW_V(p)))
#endif

#if VEC == 2
#define HREDUCE(v) COMBINE((v).s0, (v).s1)
#elif VEC == 4
#define HREDUCE(v) hreduce4(v)
#elif VEC == 8
#define HREDUCE(v) hreduce4(COMBINE_V((v).lo, (v).hi))
#elif VEC == 16
#define HREDUCE(v) hreduce4(COMBINE_V(COMBINE_V((v).lo.lo, (v).lo.hi), COMBINE_V((v).hi.lo, (v).hi.hi)))
#endif
#if VEC >= 4
inline ACC_T hreduce4(CAT(ACC_T, 4) v) {
    return COMBINE(COMBINE(v.s0, v.s1), COMBINE(v.s2, v.s3));
}
#endif

/* ---- sub-group steps ---------------------------------------------------------------- */
#if SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shuffle_xor(ACC_T v, uint mask) { return sub_group_shuffle_xor(v, mask); }
#elif SG_MODE == SG_SHUFFLE_QCOM
/* cl_qcom_subgroup_shuffle moves 32-bit values; 64-bit accumulators go as two halves. */
inline ACC_T shuffle_xor(ACC_T v, uint mask) {
#if ACC_BYTES == 8
    uint2 u = as_uint2(v);
    u.x = qcom_sub_group_shuffle_xor(u.x, mask, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
    u.y = qcom_sub_group_shuffle_xor(u.y, mask, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
    return CAT(as_, ACC_T)(u);
#else
    return qcom_sub_group_shuffle_xor(v, mask, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, v);
#endif
}
#endif

#if SG_MODE == SG_SHUFFLE_KHR || SG_MODE == SG_SHUFFLE_QCOM
/* Butterfly over aligned groups of `width` lanes: xor masks below `width` never leave the
 * group, so several rows can share one sub-group. Every lane ends with its group's value. */
inline ACC_T butterfly(ACC_T v, uint width) {
    for (uint m = width >> 1; m > 0; m >>= 1) {
        v = COMBINE(v, shuffle_xor(v, m));
    }
    return v;
}
#define SG_REDUCE(v) butterfly((v), SG_SIZE)
#elif SG_MODE == SG_BUILTIN
#if defined(OP_SUM)
#define SG_REDUCE_RAW(v) sub_group_reduce_add(v)
#elif defined(OP_MAX)
#define SG_REDUCE_RAW(v) sub_group_reduce_max(v)
#else
#define SG_REDUCE_RAW(v) sub_group_reduce_min(v)
#endif
#if ACC_IS_FLOAT && !defined(OP_SUM)
/* The built-in max/min leave NaN handling unspecified; numpy propagates it. */
inline ACC_T sg_reduce(ACC_T v) {
    ACC_T r = SG_REDUCE_RAW(v);
    return sub_group_any(isnan(v)) ? (ACC_T)NAN : r;
}
#define SG_REDUCE(v) sg_reduce(v)
#else
#define SG_REDUCE(v) SG_REDUCE_RAW(v)
#endif
#endif

/* ---- the kernel --------------------------------------------------------------------- */
#define TEAMS (WG_SIZE / LANES)
#if SG_MODE == SG_LOCAL
#define SCRATCH_LEN WG_SIZE
#else
#define SCRATCH_LEN (WG_SIZE / SG_SIZE)
#endif

__kernel SG_ATTR __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_rows(__global const IN_T *restrict in, const ulong in_offset,
                 __global OUT_T *restrict out, const ulong out_offset,
                 const ulong n_rows, const ulong row_len, const ulong row_stride,
                 const ulong chunk_len, const ulong mean_count)
{
#if LANES > 1
    __local ACC_T scratch[SCRATCH_LEN];
#endif
    const uint lid = get_local_id(0);
#if SG_MODE != SG_LOCAL && LANES <= SG_SIZE
    /* Teams are aligned lane groups of one sub-group, named by sub-group ids so that the
     * butterfly's partners are exactly the team's lanes. */
    const uint sg_lid = get_sub_group_local_id();
    const uint lane = sg_lid % LANES;
    const uint team = get_sub_group_id() * (SG_SIZE / LANES) + sg_lid / LANES;
#else
    const uint lane = lid % LANES;
    const uint team = lid / LANES;
#endif
    const ulong n_tasks = n_rows * SPLIT;
    const ulong task_stride = (ulong)get_num_groups(0) * TEAMS;

    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_tasks; base += task_stride) {
        const ulong task = base + team;
        ACC_T acc = IDENTITY;
        if (task < n_tasks) {
            const ulong row = task / SPLIT;
            const ulong start = (task % SPLIT) * chunk_len;
            const ulong stop = min(start + chunk_len, row_len);
            const ulong len = stop - start;  /* start < row_len: the planner never makes an empty chunk */
            __global const IN_T *p = in + in_offset + row * row_stride + start;
#if VEC > 1
            const ulong full = len - len % VEC;
            ACC_V accv = (ACC_V)(IDENTITY);
            for (ulong i = (ulong)lane * VEC; i < full; i += (ulong)LANES * VEC) {
                accv = COMBINE_V(accv, LOAD_V(p + i));
            }
            acc = HREDUCE(accv);
#else
            const ulong full = 0;
#endif
            for (ulong i = full + lane; i < len; i += LANES) {
                acc = COMBINE(acc, LOAD_1(p + i));
            }
        }

#if LANES > 1
#if SG_MODE == SG_LOCAL
        scratch[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) {
                scratch[lid] = COMBINE(scratch[lid], scratch[lid + s]);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        acc = scratch[lid];
#elif LANES < SG_SIZE
        acc = butterfly(acc, LANES);
#elif LANES == SG_SIZE
        acc = SG_REDUCE(acc);
#else
        /* Work-group per row: each sub-group reduces, lane 0 parks the partial, the team's
         * first sub-group folds the partials (strided, so any LANES / SG_SIZE works). */
        acc = SG_REDUCE(acc);
        if (get_sub_group_local_id() == 0) {
            scratch[get_sub_group_id()] = acc;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane < SG_SIZE) {
            /* uniform per sub-group: lane < SG_SIZE is exactly the team's first sub-group */
            ACC_T part = IDENTITY;
            for (uint j = lane; j < LANES / SG_SIZE; j += SG_SIZE) {
                part = COMBINE(part, scratch[team * (LANES / SG_SIZE) + j]);
            }
            acc = SG_REDUCE(part);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
#endif /* LANES > 1 */

        if (lane == 0 && task < n_tasks) {
#if FINALIZE == FIN_MEAN
            acc = acc / (ACC_T)mean_count;
#elif FINALIZE == FIN_SQRT
            acc = sqrt(acc);
#endif
#if OUT_HALF
            vstore_half(acc, 0, out + out_offset + task);
#else
            out[out_offset + task] = (OUT_T)acc;
#endif
        }
    }
}

/* ---- the strided axis ------------------------------------------------------------------ */
/* (outer, K, inner) with inner > 1: each work-item owns a tile of NBLK * VEC adjacent
 * columns of one outer slice (or of one K chunk of it, SPLIT > 1) and walks K with one
 * vector accumulator per VEC columns.
 *   GPUs: NBLK 1, so at every k neighbouring work-items read neighbouring addresses.
 *   CPUs: NBLK covers a whole row span (up to 4 KB), so each work-item streams through
 *   memory; one VEC-wide strip per work-item stepping 4 KB per k defeated the hardware
 *   prefetchers (page-crossing strides) and ran 3-10x slower.
 * Compiled beside reduce_rows; the row macros are then given neutral values. */
#ifndef NBLK
#define NBLK 1
#endif
#if FINALIZE == FIN_MEAN
#define FINISH(a) ((a) / (ACC_T)count)
#elif FINALIZE == FIN_SQRT
#define FINISH(a) sqrt(a)
#else
#define FINISH(a) (a)
#endif
#if OUT_HALF
#define STORE_1(v, p) vstore_half((v), 0, (p))
#else
#define STORE_1(v, p) (*(p) = (OUT_T)(v))
#endif
#if VEC == 1
#define STORE_V(v, p) STORE_1(v, p)
#elif OUT_HALF
#define STORE_V(v, p) CAT(vstore_half, VEC)((v), 0, (p))
#else
#define STORE_V(v, p) CAT(vstore, VEC)(CAT(convert_, CAT(OUT_T, VEC))(v), 0, (p))
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_cols(__global const IN_T *restrict in, const ulong in_offset,
                 __global OUT_T *restrict out, const ulong out_offset,
                 const ulong outer, const ulong k_len, const ulong inner,
                 const ulong outer_stride, const ulong k_stride,
                 const ulong chunk_len, const ulong count)
{
    const ulong tile = (ulong)VEC * NBLK;
    const ulong tiles = (inner + tile - 1) / tile;
    const ulong n_items = outer * SPLIT * tiles;
    for (ulong item = get_global_id(0); item < n_items; item += get_global_size(0)) {
        const ulong task = item / tiles;            /* outer * SPLIT + chunk */
        const ulong col = (item % tiles) * tile;
        const ulong o = task / SPLIT;
        const ulong k0 = (task % SPLIT) * chunk_len;
        const ulong k1 = min(k0 + chunk_len, k_len);
        const ulong width = min(tile, inner - col);
        const uint full = (uint)(width / VEC);      /* whole vectors in this tile */
        const uint rem = (uint)(width % VEC);       /* columns after them */
        __global const IN_T *p = in + in_offset + o * outer_stride + col;
        __global OUT_T *dst = out + out_offset + task * inner + col;   /* (outer, SPLIT, inner) */
        ACC_V acc[NBLK];
        ACC_T tail[VEC];
        for (uint b = 0; b < NBLK; ++b) acc[b] = (ACC_V)(IDENTITY);
        for (uint j = 0; j < VEC; ++j) tail[j] = IDENTITY;
        for (ulong k = k0; k < k1; ++k) {
            __global const IN_T *q = p + k * k_stride;
            for (uint b = 0; b < full; ++b) acc[b] = COMBINE_V(acc[b], LOAD_V(q + b * VEC));
            for (uint j = 0; j < rem; ++j) tail[j] = COMBINE(tail[j], LOAD_1(q + full * VEC + j));
        }
        for (uint b = 0; b < full; ++b) STORE_V(FINISH(acc[b]), dst + b * VEC);
        for (uint j = 0; j < rem; ++j) STORE_1(FINISH(tail[j]), dst + full * VEC + j);
    }
}
