/* reduce_state.cl: reductions whose running value is a small struct ("state").
 *
 * Entry points (ENTRY picks one; only that one is compiled):
 *   reduce_rows_state  rows of a (rows, row_len) array, teams of LANES work-items per row
 *                      as in reduce_rows.cl; for var/std (Welford/Chan), argmax/argmin and
 *                      logsumexp, whose merges need more than one value.
 *   reduce_cols        the strided case (outer, K, inner) with inner > 1: each work-item
 *                      owns VEC adjacent columns and walks K, so neighbouring work-items read
 *                      neighbouring addresses. Serves every op (scalar ones are 1-field states).
 * Both can write partial states (OUT_STATES) for a split over K and read them back in a
 * second pass (IN_STATES).
 *
 * Required macros (cl_kernels/README.md): ENTRY, OPK, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT,
 * ACC_BYTES, IN_HALF, OUT_HALF, FINALIZE, IN_STATES, OUT_STATES, WG_SIZE, VEC, SPLIT;
 * OPK_SCALAR: one OP_*, MAP, IDENTITY; OPK_ARG: ARG_MAX or ARG_MIN, IDENTITY;
 * ENTRY_ROWS: LANES, SG_MODE, SG_SIZE, REQD_SG.
 */

#define ENTRY_ROWS 1
#define ENTRY_COLS 2
#define OPK_SCALAR 0
#define OPK_WELFORD 1
#define OPK_ARG 2
#define OPK_LSE 3
#define FIN_NONE 0
#define FIN_MEAN 1
#define FIN_SQRT 2
#define FIN_VAR 3
#define FIN_STD 4
#define FIN_INDEX 5
#define FIN_LSE 6
#define MAP_NONE 0
#define MAP_ABS 1
#define MAP_SQUARE 2
#define MAP_NONZERO 3
#define MAP_NOTNAN 4
#define MAP_NAN_TO_ZERO 5
#define MAP_ONE 6
#define SG_LOCAL 0
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3

#ifndef ENTRY
#error "ENTRY (1 rows, 2 cols) is required"
#endif
#ifndef OPK
#error "OPK (0 scalar, 1 welford, 2 arg, 3 logsumexp) is required"
#endif
#if !defined(IN_T) || !defined(ACC_T) || !defined(OUT_T)
#error "IN_T, ACC_T and OUT_T are required"
#endif
#if !defined(ACC_IS_FLOAT) || !defined(ACC_BYTES)
#error "ACC_IS_FLOAT and ACC_BYTES are required"
#endif
#if !defined(IN_HALF) || !defined(OUT_HALF)
#error "IN_HALF and OUT_HALF (0/1) are required"
#endif
#ifndef FINALIZE
#error "FINALIZE (0 none, 1 mean, 2 sqrt, 3 var, 4 std, 5 index, 6 logsumexp) is required"
#endif
#if !defined(IN_STATES) || !defined(OUT_STATES)
#error "IN_STATES and OUT_STATES (0/1) are required"
#endif
#if !defined(WG_SIZE) || !defined(VEC) || !defined(SPLIT)
#error "WG_SIZE, VEC and SPLIT are required"
#endif
#if OPK == OPK_SCALAR && !defined(MAP)
#error "OPK_SCALAR needs MAP"
#endif
#if (OPK == OPK_SCALAR || OPK == OPK_ARG) && !defined(IDENTITY)
#error "OPK_SCALAR and OPK_ARG need IDENTITY (the value every element beats)"
#endif
#if OPK == OPK_SCALAR && !defined(OP_SUM) && !defined(OP_PROD) && !defined(OP_MAX) && !defined(OP_MIN) && !defined(OP_NANMAX) && !defined(OP_NANMIN)
#error "OPK_SCALAR needs one of OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_NANMAX, OP_NANMIN"
#endif
#if OPK == OPK_ARG && !defined(ARG_MAX) && !defined(ARG_MIN)
#error "OPK_ARG needs ARG_MAX or ARG_MIN"
#endif
#if (OPK == OPK_WELFORD || OPK == OPK_LSE) && !ACC_IS_FLOAT
#error "var/std/logsumexp accumulate in a floating type"
#endif
#if ENTRY == ENTRY_ROWS
#if !defined(LANES) || !defined(SG_MODE) || !defined(SG_SIZE) || !defined(REQD_SG)
#error "reduce_rows_state needs LANES, SG_MODE, SG_SIZE and REQD_SG"
#endif
#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if SG_MODE != SG_LOCAL && SG_MODE != SG_SHUFFLE_KHR && SG_MODE != SG_SHUFFLE_QCOM
#error "reduce_rows_state merges states with shuffles or local memory (SG_MODE 0, 2 or 3)"
#endif
#endif
#if IN_STATES && VEC != 1
#error "a pass over partial states reads one state at a time (VEC 1)"
#endif

#if ACC_BYTES == 8 && ACC_IS_FLOAT
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE != SG_LOCAL && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE == SG_SHUFFLE_KHR
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE == SG_SHUFFLE_QCOM
#pragma OPENCL EXTENSION cl_qcom_subgroup_shuffle : enable
#endif
#if ENTRY == ENTRY_ROWS && (REQD_SG == 2 || REQD_SG == 3)
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* ---- loads: element -> mapped -> ACC_T ------------------------------------------------- */
#if IN_HALF
#define RAW_T float
#define LOAD_RAW(p) vload_half(0, (p))
#else
#define RAW_T IN_T
#define LOAD_RAW(p) (*(p))
#endif

#if OPK != OPK_SCALAR || MAP == MAP_NONE
#define MAPPED(x) (x)
#elif MAP == MAP_ABS
#define MAPPED(x) fabs(x)
#elif MAP == MAP_SQUARE
#define MAPPED(x) ((x) * (x))
#elif MAP == MAP_NONZERO
#define MAPPED(x) ((x) != (RAW_T)0 ? (RAW_T)1 : (RAW_T)0)
#elif MAP == MAP_NOTNAN
#define MAPPED(x) (isnan(x) ? (RAW_T)0 : (RAW_T)1)
#elif MAP == MAP_NAN_TO_ZERO
#define MAPPED(x) (isnan(x) ? (RAW_T)0 : (x))
#elif MAP == MAP_ONE
#define MAPPED(x) ((RAW_T)1)
#endif
#define LOAD_ACC(p) ((ACC_T)MAPPED(LOAD_RAW(p)))

#if ACC_IS_FLOAT
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) 0
#endif

/* ---- states ---------------------------------------------------------------------------- */
#if OPK == OPK_SCALAR
typedef struct { ACC_T a; } state_t;
#if defined(OP_SUM)
#define COMBINE(a, b) ((a) + (b))
#elif defined(OP_PROD)
#define COMBINE(a, b) ((a) * (b))
#elif defined(OP_NANMAX)
#define COMBINE(a, b) fmax((a), (b))
#elif defined(OP_NANMIN)
#define COMBINE(a, b) fmin((a), (b))
#elif defined(OP_MAX)
#define COMBINE(a, b) ((IS_NAN(a) || (a) > (b)) ? (a) : (b))
#else
#define COMBINE(a, b) ((IS_NAN(a) || (a) < (b)) ? (a) : (b))
#endif
inline state_t st_identity(void) { state_t s; s.a = IDENTITY; return s; }
inline state_t st_push(state_t s, ACC_T v, ulong k) { s.a = COMBINE(s.a, v); return s; }
inline state_t st_merge(state_t x, state_t y) { x.a = COMBINE(x.a, y.a); return x; }

#elif OPK == OPK_WELFORD
/* Running mean and sum of squared deviations; Chan et al.'s pairwise merge keeps var
 * accurate where sum-of-squares cancels (large mean, small spread). */
typedef struct { ACC_T mean; ACC_T m2; ulong n; } state_t;
inline state_t st_identity(void) { state_t s; s.mean = 0; s.m2 = 0; s.n = 0; return s; }
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    s.n += 1;
    const ACC_T d = v - s.mean;
    s.mean += d / (ACC_T)s.n;
    s.m2 += d * (v - s.mean);
    return s;
}
inline state_t st_merge(state_t x, state_t y) {
    if (y.n == 0) return x;
    if (x.n == 0) return y;
    const ulong n = x.n + y.n;
    const ACC_T d = y.mean - x.mean;
    const ACC_T wy = (ACC_T)y.n / (ACC_T)n;
    x.mean = x.mean + d * wy;
    x.m2 = x.m2 + y.m2 + d * d * (ACC_T)x.n * wy;
    x.n = n;
    return x;
}

#elif OPK == OPK_ARG
/* First occurrence wins ties, and a NaN beats every number (numpy's argmax/argmin). */
typedef struct { ACC_T v; ulong i; } state_t;
#if defined(ARG_MAX)
#define BEATS(a, b) ((a) > (b))
#else
#define BEATS(a, b) ((a) < (b))
#endif
/* IDENTITY is the losing extreme (-inf / INT_MIN for argmax); its index loses every tie. */
inline state_t st_identity(void) { state_t s; s.v = IDENTITY; s.i = ULONG_MAX; return s; }
inline state_t st_merge(state_t x, state_t y) {
    const int xn = IS_NAN(x.v), yn = IS_NAN(y.v);
    if (xn || yn) {
        if (xn && yn) return x.i < y.i ? x : y;
        return xn ? x : y;
    }
    if (BEATS(x.v, y.v)) return x;
    if (BEATS(y.v, x.v)) return y;
    return x.i < y.i ? x : y;
}
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    state_t t; t.v = v; t.i = k;
    return st_merge(s, t);
}

#elif OPK == OPK_LSE
/* Online log-sum-exp: (running max m, sum of exp(x - m)). Equal maxima add counts directly
 * so two +inf never meet in inf - inf. */
typedef struct { ACC_T m; ACC_T s; } state_t;
inline state_t st_identity(void) { state_t s; s.m = -INFINITY; s.s = 0; return s; }
inline state_t st_merge(state_t x, state_t y) {
    if (isnan(x.m) || isnan(y.m) || isnan(x.s) || isnan(y.s)) { x.m = NAN; x.s = NAN; return x; }
    if (y.s == 0) return x;
    if (x.s == 0) return y;
    if (x.m == y.m) { x.s += y.s; return x; }
    if (x.m > y.m) { x.s += y.s * exp(y.m - x.m); return x; }
    y.s += x.s * exp(x.m - y.m);
    return y;
}
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    if (v == -INFINITY) return s;
    state_t t; t.m = v; t.s = 1;
    return st_merge(s, t);
}
#endif

/* ---- finalize -------------------------------------------------------------------------- */
#if !OUT_STATES
inline void st_write(__global OUT_T *out, ulong idx, state_t s, ulong count, ACC_T param) {
#if FINALIZE == FIN_INDEX
    out[idx] = (OUT_T)s.i;
#else
    ACC_T r;
#if FINALIZE == FIN_NONE
    r = s.a;
#elif FINALIZE == FIN_MEAN
    r = s.a / (ACC_T)count;
#elif FINALIZE == FIN_SQRT
    r = sqrt(s.a);
#elif FINALIZE == FIN_VAR || FINALIZE == FIN_STD
    /* numpy divides by max(n - ddof, 0): 0/0 -> nan, x/0 -> inf */
    const ACC_T dof = max((ACC_T)s.n - param, (ACC_T)0);
    r = s.m2 / dof;
#if FINALIZE == FIN_STD
    r = sqrt(r);
#endif
#elif FINALIZE == FIN_LSE
    r = (s.s == 0) ? (ACC_T)(-INFINITY) : s.m + log(s.s);
#endif
#if OUT_HALF
    vstore_half(r, 0, out + idx);
#else
    out[idx] = (OUT_T)r;
#endif
#endif
}
#endif

#if IN_STATES
#define IN_PTR __global const state_t *restrict
#else
#define IN_PTR __global const IN_T *restrict
#endif
#if OUT_STATES
#define OUT_PTR __global state_t *restrict
#else
#define OUT_PTR __global OUT_T *restrict
#endif

/* ---- rows ------------------------------------------------------------------------------ */
#if ENTRY == ENTRY_ROWS

#if REQD_SG == 1
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG_SIZE)))
#elif REQD_SG == 2
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("half")))
#elif REQD_SG == 3
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("full")))
#else
#define SG_ATTR
#endif

#if SG_MODE != SG_LOCAL
inline uint shfl_u32(uint v, uint m) {
#if SG_MODE == SG_SHUFFLE_KHR
    return sub_group_shuffle_xor(v, m);
#else
    return qcom_sub_group_shuffle_xor(v, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
#endif
}
/* Fields move as 32-bit words: the qcom shuffle takes 32-bit values only. */
inline ACC_T shfl_acc(ACC_T v, uint m) {
#if ACC_BYTES == 8
    uint2 u = as_uint2(v);
    u.x = shfl_u32(u.x, m);
    u.y = shfl_u32(u.y, m);
    return CAT(as_, ACC_T)(u);
#else
    return CAT(as_, ACC_T)(shfl_u32(as_uint(v), m));
#endif
}
inline ulong shfl_u64(ulong v, uint m) {
    uint2 u = as_uint2(v);
    u.x = shfl_u32(u.x, m);
    u.y = shfl_u32(u.y, m);
    return as_ulong(u);
}
inline state_t st_shuffle_xor(state_t s, uint m) {
#if OPK == OPK_SCALAR
    s.a = shfl_acc(s.a, m);
#elif OPK == OPK_WELFORD
    s.mean = shfl_acc(s.mean, m); s.m2 = shfl_acc(s.m2, m); s.n = shfl_u64(s.n, m);
#elif OPK == OPK_ARG
    s.v = shfl_acc(s.v, m); s.i = shfl_u64(s.i, m);
#else
    s.m = shfl_acc(s.m, m); s.s = shfl_acc(s.s, m);
#endif
    return s;
}
inline state_t st_butterfly(state_t s, uint width) {
    for (uint m = width >> 1; m > 0; m >>= 1) {
        s = st_merge(s, st_shuffle_xor(s, m));
    }
    return s;
}
#endif

#define TEAMS (WG_SIZE / LANES)

__kernel SG_ATTR __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_rows_state(IN_PTR in, const ulong in_offset, OUT_PTR out, const ulong out_offset,
                       const ulong n_rows, const ulong row_len, const ulong row_stride,
                       const ulong chunk_len, const ulong count, const ACC_T param)
{
#if LANES > 1
#if SG_MODE == SG_LOCAL
    __local state_t scratch[WG_SIZE];
#else
    __local state_t scratch[WG_SIZE / SG_SIZE];
#endif
#endif
    const uint lid = get_local_id(0);
#if SG_MODE != SG_LOCAL && LANES <= SG_SIZE
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
        state_t st = st_identity();
        if (task < n_tasks) {
            const ulong row = task / SPLIT;
            const ulong start = (task % SPLIT) * chunk_len;
            const ulong stop = min(start + chunk_len, row_len);
            const ulong len = stop - start;  /* start < row_len: the planner never makes an empty chunk */
            IN_PTR p = in + in_offset + row * row_stride + start;
#if VEC > 1
            const ulong full = len - len % VEC;
            for (ulong i = (ulong)lane * VEC; i < full; i += (ulong)LANES * VEC) {
#if OPK == OPK_WELFORD
                /* a whole vector enters as one (mean, m2, VEC) state: one divide per VEC */
                ACC_T v[VEC];
                ACC_T sum = 0;
                for (uint j = 0; j < VEC; ++j) { v[j] = LOAD_ACC(p + i + j); sum += v[j]; }
                state_t c; c.mean = sum / (ACC_T)VEC; c.m2 = 0; c.n = VEC;
                for (uint j = 0; j < VEC; ++j) { const ACC_T d = v[j] - c.mean; c.m2 += d * d; }
                st = st_merge(st, c);
#else
                for (uint j = 0; j < VEC; ++j) st = st_push(st, LOAD_ACC(p + i + j), start + i + j);
#endif
            }
#else
            const ulong full = 0;
#endif
            for (ulong i = full + lane; i < len; i += LANES) {
#if IN_STATES
                st = st_merge(st, p[i]);
#else
                st = st_push(st, LOAD_ACC(p + i), start + i);
#endif
            }
        }

#if LANES > 1
#if SG_MODE == SG_LOCAL
        scratch[lid] = st;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) scratch[lid] = st_merge(scratch[lid], scratch[lid + s]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        st = scratch[lid];
#elif LANES <= SG_SIZE
        st = st_butterfly(st, LANES);
#else
        st = st_butterfly(st, SG_SIZE);
        if (get_sub_group_local_id() == 0) scratch[get_sub_group_id()] = st;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane < SG_SIZE) {  /* exactly the team's first sub-group */
            state_t part = st_identity();
            for (uint j = lane; j < LANES / SG_SIZE; j += SG_SIZE) {
                part = st_merge(part, scratch[team * (LANES / SG_SIZE) + j]);
            }
            st = st_butterfly(part, SG_SIZE);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
#endif
        if (lane == 0 && task < n_tasks) {
#if OUT_STATES
            out[out_offset + task] = st;
#else
            st_write(out, out_offset + task, st, count, param);
#endif
        }
    }
}
#endif /* ENTRY_ROWS */

/* ---- columns --------------------------------------------------------------------------- */
#if ENTRY == ENTRY_COLS
/* Work item -> (outer index, K chunk, block of VEC columns); columns vary fastest so a
 * sub-group/warp reads one contiguous span of the inner axis at each k. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_cols(IN_PTR in, const ulong in_offset, OUT_PTR out, const ulong out_offset,
                 const ulong outer, const ulong k_len, const ulong inner,
                 const ulong outer_stride, const ulong k_stride,
                 const ulong chunk_len, const ulong count, const ACC_T param)
{
    const ulong blocks = (inner + VEC - 1) / VEC;
    const ulong n_items = outer * SPLIT * blocks;
    for (ulong item = get_global_id(0); item < n_items; item += get_global_size(0)) {
        const ulong block = item % blocks;
        const ulong task = item / blocks;           /* outer * SPLIT + chunk */
        const ulong o = task / SPLIT;
        const ulong k0 = (task % SPLIT) * chunk_len;
        const ulong k1 = min(k0 + chunk_len, k_len);
        const ulong col = block * VEC;
        const uint ncols = (uint)min((ulong)VEC, inner - col);
        IN_PTR p = in + in_offset + o * outer_stride + col;
        state_t st[VEC];
        for (uint j = 0; j < VEC; ++j) st[j] = st_identity();
        for (ulong k = k0; k < k1; ++k) {
            IN_PTR q = p + k * k_stride;
#if IN_STATES
            for (uint j = 0; j < ncols; ++j) st[j] = st_merge(st[j], q[j]);
#elif VEC > 1 && !IN_HALF
            if (ncols == VEC) {
                IN_T v[VEC];
                CAT(vstore, VEC)(CAT(vload, VEC)(0, q), 0, v);
                for (uint j = 0; j < VEC; ++j) st[j] = st_push(st[j], (ACC_T)MAPPED((RAW_T)v[j]), k);
            } else {
                for (uint j = 0; j < ncols; ++j) st[j] = st_push(st[j], LOAD_ACC(q + j), k);
            }
#else
            for (uint j = 0; j < ncols; ++j) st[j] = st_push(st[j], LOAD_ACC(q + j), k);
#endif
        }
        /* partial states and results are laid out (outer, SPLIT or 1, inner) */
        const ulong dst = task * inner + col;
        for (uint j = 0; j < ncols; ++j) {
#if OUT_STATES
            out[out_offset + dst + j] = st[j];
#else
            st_write(out, out_offset + dst + j, st[j], count, param);
#endif
        }
    }
}
#endif /* ENTRY_COLS */
