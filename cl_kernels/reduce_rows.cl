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
 * One source for OpenCL and CUDA: the backend puts cl_dialect_opencl.h or cl_dialect_cuda.h
 * in front of this file; both define the portable words used here (KERNEL_WG_SIZE, LOAD_RO,
 * VLOAD_ARRAY, VLOAD_HEAD, UNROLL_LOOP, ...). Vector loads fill private arrays, so the
 * algorithm needs no vector types.
 *
 * Required macros (see cl_kernels/README.md): one of OP_SUM, OP_PROD, OP_MAX, OP_MIN,
 * OP_NANMAX, OP_NANMIN; MAP, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT, ACC_BYTES, IDENTITY, WG_SIZE,
 * LANES, VEC, SPLIT, SG_MODE, SG_SIZE, REQD_SG, FINALIZE, IN_HALF, OUT_HALF.
 * Optional: UNROLL (vector loads in flight per work-item, default UNROLL_DEFAULT: 1 on
 * OpenCL, 4 on CUDA), MIN_BLOCKS (groups per compute unit the register allocator plans
 * for, CUDA's __launch_bounds__; default 1), NBLK (reduce_cols: vectors per work-item).
 */

#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3
#define SG_SHUFFLE_PTX 4

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
#error "SG_MODE (0 local, 1 builtin, 2 KHR shuffle, 3 qcom shuffle, 4 PTX shuffle) is required"
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
#ifndef UNROLL
#define UNROLL UNROLL_DEFAULT
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef NBLK
#define NBLK 1
#endif


#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 1, 2, 4, 8 or 16"
#endif
#if UNROLL < 1 || UNROLL > 8
#error "UNROLL must be 1..8"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
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
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && (defined(OP_PROD) || defined(OP_NANMAX) || defined(OP_NANMIN))
#error "no sub-group built-in for prod, and built-in max/min leave NaN unspecified: use a shuffle mode"
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

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* ---- the op ------------------------------------------------------------------------ */
/* max/min propagate NaN like numpy (fmax/fmin would drop it); nanmax/nanmin are fmax/fmin.
 * combine() is a function so each argument is evaluated once: a shuffle inside a ?: would
 * run only in the lanes that take that branch (wrong values on CUDA, undefined in OpenCL). */
#if defined(OP_SUM)
#define COMBINE_EXPR(a, b) ((a) + (b))
#elif defined(OP_PROD)
#define COMBINE_EXPR(a, b) ((a) * (b))
#elif defined(OP_NANMAX)
#define COMBINE_EXPR(a, b) fmax((a), (b))
#elif defined(OP_NANMIN)
#define COMBINE_EXPR(a, b) fmin((a), (b))
#elif ACC_IS_FLOAT && defined(OP_MAX)
#define COMBINE_EXPR(a, b) ((isnan(a) || (a) > (b)) ? (a) : (b))
#elif ACC_IS_FLOAT && defined(OP_MIN)
#define COMBINE_EXPR(a, b) ((isnan(a) || (a) < (b)) ? (a) : (b))
#elif defined(OP_MAX)
#define COMBINE_EXPR(a, b) max((a), (b))
#else
#define COMBINE_EXPR(a, b) min((a), (b))
#endif
inline ACC_T combine(const ACC_T a, const ACC_T b) { return COMBINE_EXPR(a, b); }
#define COMBINE(a, b) combine((a), (b))
#if defined(OP_MAX)
#define BUILTIN_MAXMIN(v) sub_group_reduce_max(v)
#else
#define BUILTIN_MAXMIN(v) sub_group_reduce_min(v)
#endif

/* ---- loads: IN_T -> mapped -> ACC_T ------------------------------------------------- */
/* MAP runs on the loaded type (float for half input) before the conversion to ACC_T, so
 * "nonzero" sees 0.5 as nonzero even when ACC_T is an integer. */
#if IN_HALF
#define RAW_T float
#define LOAD_RAW_1(p) LOAD_RO_HALF(p)
#define VLOAD_RAW(p, d) VLOAD_HALF_ARRAY(VEC, (p), (d))
#else
#define RAW_T IN_T
#define LOAD_RAW_1(p) LOAD_RO(p)
#define VLOAD_RAW(p, d) VLOAD_ARRAY(VEC, (p), (d))
#endif

#if MAP == MAP_NONE
#define MAP_1(x) (x)
#elif MAP == MAP_ABS
#define MAP_1(x) fabs(x)
#elif MAP == MAP_SQUARE
#define MAP_1(x) ((x) * (x))
#elif MAP == MAP_NONZERO
#define MAP_1(x) ((x) != (RAW_T)0 ? (RAW_T)1 : (RAW_T)0)
#elif MAP == MAP_NOTNAN
#define MAP_1(x) (isnan(x) ? (RAW_T)0 : (RAW_T)1)
#elif MAP == MAP_NAN_TO_ZERO
#define MAP_1(x) (isnan(x) ? (RAW_T)0 : (x))
#elif MAP == MAP_ONE
#define MAP_1(x) ((RAW_T)1)
#endif

inline ACC_T load_1(__global const IN_T *p) { return (ACC_T)MAP_1(LOAD_RAW_1(p)); }

/* Fold VEC loaded elements into VEC accumulators. p must satisfy VLOAD_ALIGNED. */
inline void fold_vec(ACC_T *acc, __global const IN_T *p) {
    RAW_T raw[VEC];
    VLOAD_RAW(p, raw);
    UNROLL_LOOP
    for (int j = 0; j < VEC; ++j) {
        acc[j] = COMBINE(acc[j], (ACC_T)MAP_1(raw[j]));
    }
}

/* Horizontal combine of VEC accumulators; pairs j, j + 4, j + 8, j + 12 first. */
inline ACC_T hreduce(const ACC_T *v) {
#if VEC == 1
    return v[0];
#elif VEC == 2
    return COMBINE(v[0], v[1]);
#else
    ACC_T w[4];
    UNROLL_LOOP
    for (int j = 0; j < 4; ++j) {
#if VEC == 4
        w[j] = v[j];
#elif VEC == 8
        w[j] = COMBINE(v[j], v[j + 4]);
#else
        w[j] = COMBINE(COMBINE(v[j], v[j + 4]), COMBINE(v[j + 8], v[j + 12]));
#endif
    }
    return COMBINE(COMBINE(w[0], w[1]), COMBINE(w[2], w[3]));
#endif
}

/* ---- sub-group steps: one helper per SG_MODE behind sg_reduce (and butterfly) ------- */
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
#elif SG_MODE == SG_SHUFFLE_PTX
/* The dialect's 32-bit word shuffle (NVIDIA OpenCL: shfl.sync.bfly.b32); 64-bit
 * accumulators move as two words. */
inline ACC_T shuffle_xor(ACC_T v, uint mask) {
#if ACC_BYTES == 8
    uint2 u = as_uint2(v);
    u.x = word_shuffle_xor(u.x, mask);
    u.y = word_shuffle_xor(u.y, mask);
    return CAT(as_, ACC_T)(u);
#else
    return CAT(as_, ACC_T)(word_shuffle_xor(as_uint(v), mask));
#endif
}
#endif

#if SG_MODE == SG_SHUFFLE_KHR || SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX
/* Butterfly over aligned groups of `width` lanes: xor masks below `width` never leave the
 * group, so several rows can share one sub-group. Every lane ends with its group's value. */
inline ACC_T butterfly(ACC_T v, const uint width) {
    UNROLL_LOOP
    for (uint m = width >> 1; m > 0; m >>= 1) {
        v = COMBINE(v, shuffle_xor(v, m));
    }
    return v;
}
inline ACC_T sg_reduce(ACC_T v) { return butterfly(v, SG_SIZE); }
#elif SG_MODE == SG_BUILTIN && defined(OP_SUM)
inline ACC_T sg_reduce(ACC_T v) { return sub_group_reduce_add(v); }
#elif SG_MODE == SG_BUILTIN && !ACC_IS_FLOAT
inline ACC_T sg_reduce(ACC_T v) { return BUILTIN_MAXMIN(v); }
#elif SG_MODE == SG_BUILTIN
/* The built-in max/min leave NaN handling unspecified; numpy propagates it. */
inline ACC_T sg_reduce(ACC_T v) {
    const ACC_T r = BUILTIN_MAXMIN(v);
    return sub_group_any(isnan(v)) ? (ACC_T)NAN : r;
}
#endif

/* ---- the kernel --------------------------------------------------------------------- */
#define TEAMS (WG_SIZE / LANES)
#if SG_MODE == SG_LOCAL
#define SCRATCH_LEN WG_SIZE
#else
#define SCRATCH_LEN (WG_SIZE / SG_SIZE)
#endif

/* One lane's share of elements [0, len) at p: a scalar head up to VLOAD_ALIGNED (none on
 * OpenCL), lane-strided VEC-element loads with UNROLL of them in flight, a scalar tail. */
inline ACC_T lane_partial(__global const IN_T *p, ulong len, const uint lane) {
    ACC_T acc = IDENTITY;
    const ulong head = min((ulong)VLOAD_HEAD(p, VEC), len);
    NO_UNROLL
    for (ulong i = lane; i < head; i += LANES) {
        acc = COMBINE(acc, load_1(p + i));
    }
    p += head;
    len -= head;
    const ulong full = len - len % VEC;
    const ulong step = (ulong)LANES * VEC;
    ACC_T accv[VEC];
    UNROLL_LOOP
    for (int j = 0; j < VEC; ++j) {
        accv[j] = IDENTITY;
    }
    ulong i = (ulong)lane * VEC;
    NO_UNROLL
    for (; i + (UNROLL - 1) * step < full; i += UNROLL * step) {
        UNROLL_LOOP
        for (int u = 0; u < UNROLL; ++u) {
            fold_vec(accv, p + i + u * step);
        }
    }
#if UNROLL > 1
    NO_UNROLL
    for (; i < full; i += step) {
        fold_vec(accv, p + i);
    }
#endif
    acc = COMBINE(acc, hreduce(accv));
    NO_UNROLL
    for (i = full + lane; i < len; i += LANES) {
        acc = COMBINE(acc, load_1(p + i));
    }
    return acc;
}

/* reduce_rows: out[out_offset + t] = the reduction of task t (row t / SPLIT, chunk t % SPLIT).
 * Launch: 1-D, local size WG_SIZE exactly, global size any multiple of it (grid stride over
 * n_rows * SPLIT tasks, TEAMS per group per trip); offsets, sizes and strides in elements;
 * chunk_len = row_len when SPLIT == 1; mean_count divides for FINALIZE 1. Output is OUT_T
 * (ACC_T partials laid out (n_rows, SPLIT) when SPLIT > 1). */
__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows(__global const IN_T *restrict in, const ulong in_offset,
                 __global OUT_T *restrict out, const ulong out_offset,
                 const ulong n_rows, const ulong row_len, const ulong row_stride,
                 const ulong chunk_len, const ulong mean_count)
{
#if LANES > 1 && (SG_MODE == SG_LOCAL || LANES > SG_SIZE)
    __local ACC_T scratch[SCRATCH_LEN];
#endif
    const uint lid = (uint)get_local_id(0);
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
            /* start < row_len: the planner never makes an empty chunk */
            acc = lane_partial(in + in_offset + row * row_stride + start, stop - start, lane);
        }

#if LANES > 1 && SG_MODE == SG_LOCAL
        scratch[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) {
                scratch[lid] = COMBINE(scratch[lid], scratch[lid + s]);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        acc = scratch[lid];
#elif LANES > 1 && LANES < SG_SIZE
        acc = butterfly(acc, LANES);
#elif LANES > 1 && LANES == SG_SIZE
        acc = sg_reduce(acc);
#elif LANES > 1
        /* Work-group per row: each sub-group reduces, lane 0 parks the partial, the team's
         * first sub-group folds the partials (strided, so any LANES / SG_SIZE works). */
        acc = sg_reduce(acc);
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
            acc = sg_reduce(part);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

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
 * columns of one outer slice (or of one K chunk of it, SPLIT > 1) and walks K with VEC
 * accumulators per block of VEC columns.
 *   GPUs: NBLK 1, so at every k neighbouring work-items read neighbouring addresses.
 *   CPUs: NBLK covers a whole row span (up to 4 KB), so each work-item streams through
 *   memory; one VEC-wide strip per work-item stepping 4 KB per k defeated the hardware
 *   prefetchers (page-crossing strides) and ran 3-10x slower.
 * Compiled beside reduce_rows; the row macros are then given neutral values. */
#if FINALIZE == FIN_MEAN
#define FINISH(a) ((a) / (ACC_T)count)
#elif FINALIZE == FIN_SQRT
#define FINISH(a) sqrt(a)
#else
#define FINISH(a) (a)
#endif

inline void store_1(__global OUT_T *p, ACC_T v) {
#if OUT_HALF
    vstore_half(v, 0, p);
#else
    *p = (OUT_T)v;
#endif
}

/* Fold one block of VEC columns at q: vector loads where VLOAD_ALIGNED held for every k
 * (`aligned`, uniform), else one element at a time. */
inline void fold_block(ACC_T *acc, __global const IN_T *q, const int aligned) {
    if (aligned) {
        fold_vec(acc, q);
    } else {
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) {
            acc[j] = COMBINE(acc[j], load_1(q + j));
        }
    }
}

/* reduce_cols: out[out_offset + (o * SPLIT + chunk) * inner + c] = the reduction over
 * k in the chunk of in[in_offset + o * outer_stride + k * k_stride + c].
 * Launch: 1-D, local size WG_SIZE, any global size (grid stride over
 * outer * SPLIT * ceil(inner / (NBLK * VEC)) items); count divides for FINALIZE 1. */
__kernel KERNEL_WG_SIZE(WG_SIZE)
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
        /* every k's row start is aligned when the first one and the stride are */
        const int aligned = VLOAD_ALIGNED(p, VEC) && VLOAD_ALIGNED(p + k_stride, VEC);
        ACC_T acc[NBLK][VEC];
        ACC_T tail[VEC];
        for (uint b = 0; b < NBLK; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) acc[b][j] = IDENTITY;
        }
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) tail[j] = IDENTITY;
        ulong k = k0;
        NO_UNROLL
        for (; k + (UNROLL - 1) < k1; k += UNROLL) {
            for (uint b = 0; b < full; ++b) {
                UNROLL_LOOP
                for (int u = 0; u < UNROLL; ++u) fold_block(acc[b], p + (k + u) * k_stride + b * VEC, aligned);
            }
            for (uint j = 0; j < rem; ++j) {
                UNROLL_LOOP
                for (int u = 0; u < UNROLL; ++u) tail[j] = COMBINE(tail[j], load_1(p + (k + u) * k_stride + full * VEC + j));
            }
        }
#if UNROLL > 1
        NO_UNROLL
        for (; k < k1; ++k) {
            for (uint b = 0; b < full; ++b) fold_block(acc[b], p + k * k_stride + b * VEC, aligned);
            for (uint j = 0; j < rem; ++j) tail[j] = COMBINE(tail[j], load_1(p + k * k_stride + full * VEC + j));
        }
#endif
        for (uint b = 0; b < full; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) store_1(dst + b * VEC + j, FINISH(acc[b][j]));
        }
        for (uint j = 0; j < rem; ++j) store_1(dst + full * VEC + j, FINISH(tail[j]));
    }
}

/* ---- CPU blocks (CPU_BLOCKS 1): one work-item per contiguous block of tasks ------------- */
/* A strategy for CPU devices only (the planner never picks it for a GPU profile; it can be
 * forced anywhere). The entries above spread a row over the lanes of a team, and a CPU
 * runtime vectorises the work-group's loop across work-items: Intel's CPU runtime then loads
 * each lane's VEC-element vector with gathers (vgatherqps; slow on AMD Zen) and PoCL's
 * work-item-loop vectoriser does the same, so both ran at 1-5 GB/s on a 2-core EPYC where
 * memory gives ~20. Here a work-item owns a contiguous block of tasks (whole rows, or
 * SPLIT chunks of long rows), reads it with plain vector loads into UNROLL independent
 * vector accumulators (breaking the add dependency chain), folds them horizontally and
 * stores. No local memory, no barrier, no sub-group; with WG_SIZE 1 (the planner's choice)
 * nothing is vectorised across work-items, so the vector types below are the SIMD code.
 *
 * Vector types are plain OpenCL C: this block is compiled only when the planner sets
 * CPU_BLOCKS, which a CUDA plan never does (NVRTC compiles the file without it).
 * The accumulate step is CPU_ACCUM: for sum and prod the same COMBINE_EXPR as every other
 * path, for max/min its twin without built-in calls (below), applied to whole vectors
 * (OpenCL's ?: on a vector condition is select(), so the NaN rule of float max/min holds
 * lane by lane). */
#if defined(CPU_BLOCKS) && CPU_BLOCKS

/* PoCL 3.0 from pip calls its built-ins (vloadN, isnan, max, fmax, min) as out-of-line
 * functions, spilling every vector register around each call in the hot loop (seen in the
 * objects it caches). So this block spells them with operators: a vector load is built
 * from VEC scalar loads (every compiler here merges them into one unaligned vector load),
 * isnan(x) is x != x, max/min/fmax/fmin are selects. */
#define CPU_ISNAN(x) ((x) != (x))
#define CPU_MIN_U64(a, b) ((a) < (b) ? (a) : (b))
#if VEC == 1
#define CPU_V(t) t
#define CPU_LOAD(p) LOAD_RAW_1(p)
#define CPU_TO_ACC(x) ((ACC_T)(x))
#else
#define CPU_V(t) CAT(t, VEC)
#if IN_HALF
#define CPU_LOAD(p) CAT(vload_half, VEC)(0, (p))
#else
#define CPU_LOAD(p) CAT(CPU_LOAD_, VEC)(p)
#endif
#define CPU_TO_ACC(x) CAT(convert_, CPU_V(ACC_T))(x)
#endif
#define CPU_LOAD_2(p) ((CPU_RAWV)((p)[0], (p)[1]))
#define CPU_LOAD_4(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3]))
#define CPU_LOAD_8(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#define CPU_LOAD_16(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                                   (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], (p)[15]))
#define CPU_ACCV CPU_V(ACC_T)
#define CPU_RAWV CPU_V(RAW_T)

/* MAP_1 with every constant of the vector type (a scalar beside a vector condition is not
 * accepted by every OpenCL C front end). */
#if MAP == MAP_NONE || MAP == MAP_ABS || MAP == MAP_SQUARE
#define CPU_MAP(x) MAP_1(x)
#elif MAP == MAP_NONZERO
#define CPU_MAP(x) (((x) != (CPU_RAWV)0) ? (CPU_RAWV)1 : (CPU_RAWV)0)
#elif MAP == MAP_NOTNAN
#define CPU_MAP(x) (CPU_ISNAN(x) ? (CPU_RAWV)0 : (CPU_RAWV)1)
#elif MAP == MAP_NAN_TO_ZERO
#define CPU_MAP(x) (CPU_ISNAN(x) ? (CPU_RAWV)0 : (x))
#elif MAP == MAP_ONE
#define CPU_MAP(x) ((CPU_RAWV)1)
#endif

/* COMBINE_EXPR (the op every path shares), with built-ins spelled as above; sum and prod
 * are COMBINE_EXPR itself. */
#if defined(OP_SUM) || defined(OP_PROD)
#define CPU_COMBINE(a, b) COMBINE_EXPR(a, b)
#elif defined(OP_NANMAX)
#define CPU_COMBINE(a, b) ((CPU_ISNAN(b) || (a) > (b)) ? (a) : (b))
#elif defined(OP_NANMIN)
#define CPU_COMBINE(a, b) ((CPU_ISNAN(b) || (a) < (b)) ? (a) : (b))
#elif ACC_IS_FLOAT && defined(OP_MAX)
#define CPU_COMBINE(a, b) ((CPU_ISNAN(a) || (a) > (b)) ? (a) : (b))
#elif ACC_IS_FLOAT && defined(OP_MIN)
#define CPU_COMBINE(a, b) ((CPU_ISNAN(a) || (a) < (b)) ? (a) : (b))
#elif defined(OP_MAX)
#define CPU_COMBINE(a, b) (((a) > (b)) ? (a) : (b))
#else
#define CPU_COMBINE(a, b) (((a) < (b)) ? (a) : (b))
#endif
inline ACC_T cpu_combine1(const ACC_T a, const ACC_T b) { return CPU_COMBINE(a, b); }

#define CPU_ACCUM(acc, x) ((acc) = CPU_COMBINE((acc), (x)))

/* Horizontal fold of one accumulator vector: halves, then quarters, ... */
inline ACC_T cpu_hreduce(const CPU_ACCV v) {
#if VEC == 1
    return v;
#else
#if VEC == 16
    const CAT(ACC_T, 8) v8 = CPU_COMBINE(v.lo, v.hi);
#elif VEC == 8
    const CAT(ACC_T, 8) v8 = v;
#endif
#if VEC >= 8
    const CAT(ACC_T, 4) v4 = CPU_COMBINE(v8.lo, v8.hi);
#elif VEC == 4
    const CAT(ACC_T, 4) v4 = v;
#endif
#if VEC >= 4
    const CAT(ACC_T, 2) v2 = CPU_COMBINE(v4.lo, v4.hi);
#else
    const CAT(ACC_T, 2) v2 = v;
#endif
    return cpu_combine1(v2.x, v2.y);
#endif
}

/* The reduction of len elements at p: UNROLL vector accumulators, then one, then a scalar
 * tail; nothing is read past p + len. */
inline ACC_T cpu_block(__global const IN_T *p, const ulong len) {
    CPU_ACCV a0 = (CPU_ACCV)(IDENTITY);
#if UNROLL > 1
    CPU_ACCV a1 = (CPU_ACCV)(IDENTITY);
#endif
#if UNROLL > 2
    CPU_ACCV a2 = (CPU_ACCV)(IDENTITY);
    CPU_ACCV a3 = (CPU_ACCV)(IDENTITY);
#endif
    ulong i = 0;
#if UNROLL > 2
    for (; i + 4 * VEC <= len; i += 4 * VEC) {
        CPU_ACCUM(a0, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i))));
        CPU_ACCUM(a1, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i + VEC))));
        CPU_ACCUM(a2, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i + 2 * VEC))));
        CPU_ACCUM(a3, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i + 3 * VEC))));
    }
    CPU_ACCUM(a0, a2);
    CPU_ACCUM(a1, a3);
#elif UNROLL > 1
    for (; i + 2 * VEC <= len; i += 2 * VEC) {
        CPU_ACCUM(a0, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i))));
        CPU_ACCUM(a1, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i + VEC))));
    }
#endif
#if UNROLL > 1
    CPU_ACCUM(a0, a1);
#endif
    for (; i + VEC <= len; i += VEC) {
        CPU_ACCUM(a0, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i))));
    }
    ACC_T acc = cpu_hreduce(a0);
    for (; i < len; ++i) {
        acc = cpu_combine1(acc, load_1(p + i));
    }
    return acc;
}

/* reduce_rows_cpu: the reduce_rows contract (same arguments, tasks, output layout), except
 * that work-item w of the get_global_size(0) in the grid owns tasks
 * [w * per, min((w + 1) * per, n_tasks)), per = ceil(n_tasks / global size): contiguous
 * memory per work-item, any local size. */
__kernel KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows_cpu(__global const IN_T *restrict in, const ulong in_offset,
                     __global OUT_T *restrict out, const ulong out_offset,
                     const ulong n_rows, const ulong row_len, const ulong row_stride,
                     const ulong chunk_len, const ulong mean_count)
{
    const ulong n_tasks = n_rows * SPLIT;
    const ulong items = (ulong)get_global_size(0);
    const ulong per = (n_tasks + items - 1) / items;
    const ulong t0 = CPU_MIN_U64((ulong)get_global_id(0) * per, n_tasks);
    const ulong t1 = CPU_MIN_U64(t0 + per, n_tasks);
    for (ulong task = t0; task < t1; ++task) {
        const ulong row = task / SPLIT;
        const ulong start = (task % SPLIT) * chunk_len;
        const ulong stop = CPU_MIN_U64(start + chunk_len, row_len);
        ACC_T acc = cpu_block(in + in_offset + row * row_stride + start, stop - start);
#if FINALIZE == FIN_MEAN
        acc = acc / (ACC_T)mean_count;
#elif FINALIZE == FIN_SQRT
        acc = sqrt(acc);
#endif
        store_1(out + out_offset + task, acc);
    }
}
#endif /* CPU_BLOCKS */
