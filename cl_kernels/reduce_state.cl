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
 * One source for OpenCL and CUDA: the backend puts cl_dialect_opencl.h or cl_dialect_cuda.h
 * in front of this file (see reduce_rows.cl and cl_kernels/README.md).
 *
 * Required macros (cl_kernels/README.md): ENTRY, OPK, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT,
 * ACC_BYTES, IN_HALF, OUT_HALF, FINALIZE, IN_STATES, OUT_STATES, WG_SIZE, VEC, SPLIT;
 * OPK_SCALAR: one OP_*, MAP, IDENTITY; OPK_ARG: ARG_MAX or ARG_MIN, IDENTITY; OPK_WIDE:
 * WIDE_SIGNED, OUT_STATES 1; ENTRY_ROWS: LANES, SG_MODE, SG_SIZE, REQD_SG. Optional:
 * MIN_BLOCKS (default 1); Welford: SHIFT_MODE (default 0), SHIFT_SCALE (default 1).
 */

#define ENTRY_ROWS 1
#define ENTRY_COLS 2
#define OPK_SCALAR 0
#define OPK_WELFORD 1
#define OPK_ARG 2
#define OPK_LSE 3
#define OPK_WIDE 4
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
#error "OPK (0 scalar, 1 welford, 2 arg, 3 logsumexp, 4 wide integer sum) is required"
#endif
#if OPK == OPK_WIDE && (!OUT_STATES || !defined(WIDE_SIGNED))
#error "OPK_WIDE writes its two words as states (OUT_STATES 1 on every pass) and needs WIDE_SIGNED"
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

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE != SG_LOCAL && FIXED_SG_SIZE && SG_SIZE != FIXED_SG_SIZE
#error "this API has one sub-group width (FIXED_SG_SIZE): SG_SIZE must equal it"
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE == SG_SHUFFLE_QCOM && !HAS_QCOM_SHUFFLE
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no meaning on this API: use 2"
#endif
#if ENTRY == ENTRY_ROWS && REQD_SG != 0 && !HAS_REQD_SG_ATTRS
#error "this API cannot request a sub-group width: REQD_SG must be 0"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* ---- loads: element -> mapped -> ACC_T ------------------------------------------------- */
#if IN_HALF
#define RAW_T float
#define LOAD_RAW(p) LOAD_RO_HALF(p)
#define VLOAD_RAW(p, d) VLOAD_HALF_ARRAY(VEC, (p), (d))
#else
#define RAW_T IN_T
#define LOAD_RAW(p) LOAD_RO(p)
#define VLOAD_RAW(p, d) VLOAD_ARRAY(VEC, (p), (d))
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
/* var/std see every element less a pilot: the first element of its row (rows) or column
 * (reduce_cols), the same for every lane and split chunk, so states stay comparable and
 * merge. Welford's running mean then stays near 0, where its float32 rounding is fine (data
 * at 1e6 + N(0, 1) lost 3-10x numpy's float32 accuracy without it). SHIFT_MODE (planner):
 *   0  floats: x - pilot in ACC_T (exact within a factor 2 of the pilot: Sterbenz)
 *   1  integers of up to 32 bits: exact in long, one rounding to ACC_T
 *   2  int64: exact in 64 bits where the difference fits, else in ACC_T; one rounding
 *   3  uint64: |x - pilot| exact in 64 bits, one rounding
 * so integer data lose nothing to the shift, and at most one rounding per element to ACC_T
 * (float32 on devices without fp64). Other ops: pilot 0, unused. */
#ifndef SHIFT_MODE
#define SHIFT_MODE 0
#endif
#if OPK != OPK_WELFORD
#define TO_ACC(raw, pilot) ((ACC_T)MAPPED(raw))
#elif SHIFT_MODE == 0
#define TO_ACC(raw, pilot) ((ACC_T)(raw) - (ACC_T)(pilot))
#elif SHIFT_MODE == 1
#define TO_ACC(raw, pilot) ((ACC_T)((long)(raw) - (long)(pilot)))
#elif SHIFT_MODE == 2
inline ACC_T shifted(const long x, const long x0) {
    const long d = (long)((ulong)x - (ulong)x0);         /* wraps, never undefined */
    return ((x ^ x0) & (x ^ d)) < 0 ? (ACC_T)x - (ACC_T)x0 : (ACC_T)d;   /* overflowed? */
}
#define TO_ACC(raw, pilot) (shifted((raw), (pilot)) * (ACC_T)SHIFT_SCALE)
#elif SHIFT_MODE == 3
inline ACC_T shifted(const ulong x, const ulong x0) {
    return x >= x0 ? (ACC_T)(x - x0) : -(ACC_T)(x0 - x);
}
#define TO_ACC(raw, pilot) (shifted((raw), (pilot)) * (ACC_T)SHIFT_SCALE)
#endif
/* SHIFT_SCALE: a power of two (exact) the planner gives 64-bit integers summed in float32,
 * 2**-32, so squares of differences up to 2**64 stay far below FLT_MAX; var is scaled back
 * by its inverse square when written. */
#ifndef SHIFT_SCALE
#define SHIFT_SCALE 1
#endif
#define LOAD_ACC(p, pilot) TO_ACC(LOAD_RAW(p), (pilot))

/* VEC elements at p (VLOAD_ALIGNED) as mapped (var: shifted) ACC_T values */
inline void load_vec(__global const IN_T *p, ACC_T *v, const RAW_T pilot) {
    RAW_T raw[VEC];
    VLOAD_RAW(p, raw);
    UNROLL_LOOP
    for (int j = 0; j < VEC; ++j) v[j] = TO_ACC(raw[j], pilot);
}

#if ACC_IS_FLOAT
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) 0
#endif

/* ---- states ---------------------------------------------------------------------------- */
#if OPK == OPK_SCALAR
typedef struct { ACC_T a; } state_t;
#if defined(OP_SUM)
#define COMBINE_EXPR(a, b) ((a) + (b))
#elif defined(OP_PROD)
#define COMBINE_EXPR(a, b) ((a) * (b))
#elif defined(OP_NANMAX)
#define COMBINE_EXPR(a, b) fmax((a), (b))
#elif defined(OP_NANMIN)
#define COMBINE_EXPR(a, b) fmin((a), (b))
#elif defined(OP_MAX)
#define COMBINE_EXPR(a, b) ((IS_NAN(a) || (a) > (b)) ? (a) : (b))
#else
#define COMBINE_EXPR(a, b) ((IS_NAN(a) || (a) < (b)) ? (a) : (b))
#endif
inline ACC_T combine(const ACC_T a, const ACC_T b) { return COMBINE_EXPR(a, b); }
#define COMBINE(a, b) combine((a), (b))
inline state_t st_identity(void) { state_t s; s.a = IDENTITY; return s; }
inline state_t st_push(state_t s, ACC_T v, ulong k) { s.a = COMBINE(s.a, v); return s; }
inline state_t st_merge(state_t x, state_t y) { x.a = COMBINE(x.a, y.a); return x; }

#elif OPK == OPK_WELFORD
/* Running mean, sum of squared deviations m2 + c (c: Kahan/TwoSum correction, so m2 does not
 * lose a rounding per element on long lanes; cf. reduce_rows.cl "accumulation") and count.
 * Chan et al.'s pairwise merge keeps var accurate where sum-of-squares cancels. Once m2 is
 * inf or NaN the correction is dropped (inf - inf would turn an overflowed var into NaN). */
typedef struct { ACC_T mean; ACC_T m2; ACC_T c; ulong n; } state_t;
inline state_t st_identity(void) { state_t s; s.mean = 0; s.m2 = 0; s.c = 0; s.n = 0; return s; }
/* m2 + c += v, compensated (TwoSum: v may exceed m2) */
inline state_t st_add_m2(state_t s, const ACC_T v) {
    const ACC_T t = s.m2 + v;
    const ACC_T vv = t - s.m2;
    const ACC_T e = (s.m2 - (t - vv)) + (v - vv);
    s.c = fabs(t) < INFINITY ? s.c + e : (ACC_T)0;
    s.m2 = t;
    return s;
}
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    s.n += 1;
    const ACC_T d = v - s.mean;
    s.mean += d / (ACC_T)s.n;
    return st_add_m2(s, d * (v - s.mean));
}
inline state_t st_merge(state_t x, state_t y) {
    if (y.n == 0) return x;
    if (x.n == 0) return y;
    const ulong n = x.n + y.n;
    const ACC_T d = y.mean - x.mean;
    const ACC_T wy = (ACC_T)y.n / (ACC_T)n;
    x.mean = x.mean + d * wy;
    x.c += y.c;
    x = st_add_m2(x, y.m2 + d * d * (ACC_T)x.n * wy);
    x.n = n;
    return x;
}

#elif OPK == OPK_ARG
/* First occurrence wins ties, and a NaN beats every number (numpy's argmax/argmin). */
typedef struct { ACC_T v; ulong i; } state_t;
/* beats() is a function, not a macro: on an H100 the macro's branch layout made float32
 * argmax rows 4 % slower (PTX and timings in benchmarks/cuda_single_source_h100_2026-11-23.md). */
#if defined(ARG_MAX)
inline bool beats(const ACC_T a, const ACC_T b) { return a > b; }
#else
inline bool beats(const ACC_T a, const ACC_T b) { return a < b; }
#endif
#define BEATS(a, b) beats((a), (b))
/* IDENTITY is the losing extreme (-inf / INT_MIN for argmax); its index loses every tie. */
inline state_t st_identity(void) { state_t s; s.v = IDENTITY; s.i = ULONG_MAX; return s; }
inline state_t st_merge(state_t x, state_t y) {
#if ACC_IS_FLOAT
    const bool xn = isnan(x.v), yn = isnan(y.v);
    if (xn || yn) {
        if (xn && yn) return x.i < y.i ? x : y;
        return xn ? x : y;
    }
#endif
    if (BEATS(x.v, y.v)) return x;
    if (BEATS(y.v, x.v)) return y;
    return x.i < y.i ? x : y;
}
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    state_t t; t.v = v; t.i = k;
    return st_merge(s, t);
}

#elif OPK == OPK_LSE
/* Online log-sum-exp: (running max m, s = sum of exp(x - m) over all elements but one max).
 * The max element's own term exp(0) = 1 is kept out of s, so the result m + log1p(s) keeps
 * tiny terms: logsumexp([0, -40]) = log1p(4.25e-18), where log(1 + s) would round to 0
 * (issue 8 item 4). Empty: m = -inf (a -inf element is never pushed). Equal maxima add
 * 1 + s directly, so two +inf never meet in inf - inf. */
typedef struct { ACC_T m; ACC_T s; } state_t;
inline state_t st_identity(void) { state_t s; s.m = -INFINITY; s.s = 0; return s; }
inline state_t st_merge(state_t x, state_t y) {
    if (isnan(x.m) || isnan(y.m) || isnan(x.s) || isnan(y.s)) { x.m = NAN; x.s = NAN; return x; }
    if (y.m == -INFINITY) return x;
    if (x.m == -INFINITY) return y;
    if (x.m == y.m) { x.s += y.s + (ACC_T)1; return x; }
    if (x.m > y.m) { x.s += (y.s + (ACC_T)1) * exp(y.m - x.m); return x; }
    y.s += (x.s + (ACC_T)1) * exp(x.m - y.m);
    return y;
}
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    if (v == -INFINITY) return s;
    state_t t; t.m = v; t.s = 0;
    return st_merge(s, t);
}

#elif OPK == OPK_WIDE
/* Exact integer sum in two 64-bit words, value = hi * 2**64 + lo (issue 8 item 1: an int64
 * mean must not wrap). ACC_T is long (WIDE_SIGNED 1) or ulong; an add carries into hi when
 * the low word wraps (lo + v < lo, unsigned), and a negative element also adds -1 to hi
 * (its sign extension). |hi| <= K, so nothing can overflow. The host rounds the value to
 * float64 once and divides by K (clreduce.ops.wide_sums_to_float64). */
typedef struct { ulong lo; long hi; } state_t;
inline state_t st_identity(void) { state_t s; s.lo = 0; s.hi = 0; return s; }
inline state_t st_push(state_t s, ACC_T v, ulong k) {
    const ulong lo = s.lo + (ulong)v;
#if WIDE_SIGNED
    s.hi += (long)(lo < s.lo) - (long)(v < 0);
#else
    s.hi += (long)(lo < s.lo);
#endif
    s.lo = lo;
    return s;
}
inline state_t st_merge(state_t x, state_t y) {
    const ulong lo = x.lo + y.lo;
    x.hi += y.hi + (long)(lo < x.lo);
    x.lo = lo;
    return x;
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
    r = (s.m2 + s.c) / dof / ((ACC_T)SHIFT_SCALE * (ACC_T)SHIFT_SCALE);
#if FINALIZE == FIN_STD
    r = sqrt(r);
#endif
#elif FINALIZE == FIN_LSE
    r = (s.m == -INFINITY) ? (ACC_T)(-INFINITY) : s.m + log1p(s.s);
#endif
#if OUT_HALF
    vstore_half(r, 0, out + idx);
#else
    out[idx] = (OUT_T)r;
#endif
#endif
}
#endif

/* the pilot of the row / column starting at p (see TO_ACC); 0 where unused */
#if OPK == OPK_WELFORD && !IN_STATES
#define ROW_PILOT(p) LOAD_RAW(p)
#else
#define ROW_PILOT(p) ((RAW_T)0)
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

#if SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shfl_acc(ACC_T v, uint m) { return sub_group_shuffle_xor(v, m); }
inline ulong shfl_u64(ulong v, uint m) { return sub_group_shuffle_xor(v, m); }
#elif SG_MODE == SG_SHUFFLE_QCOM
/* Fields move as 32-bit words: the qcom shuffle takes 32-bit values only. */
inline uint shfl_u32(uint v, uint m) {
    return qcom_sub_group_shuffle_xor(v, m, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
}
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
#endif
#if SG_MODE != SG_LOCAL
inline state_t st_shuffle_xor(state_t s, uint m) {
#if OPK == OPK_SCALAR
    s.a = shfl_acc(s.a, m);
#elif OPK == OPK_WELFORD
    s.mean = shfl_acc(s.mean, m); s.m2 = shfl_acc(s.m2, m); s.c = shfl_acc(s.c, m); s.n = shfl_u64(s.n, m);
#elif OPK == OPK_ARG
    s.v = shfl_acc(s.v, m); s.i = shfl_u64(s.i, m);
#elif OPK == OPK_WIDE
    s.lo = shfl_u64(s.lo, m); s.hi = (long)shfl_u64((ulong)s.hi, m);
#else
    s.m = shfl_acc(s.m, m); s.s = shfl_acc(s.s, m);
#endif
    return s;
}
inline state_t st_butterfly(state_t s, const uint width) {
    UNROLL_LOOP
    for (uint m = width >> 1; m > 0; m >>= 1) {
        s = st_merge(s, st_shuffle_xor(s, m));
    }
    return s;
}
#endif

#define TEAMS (WG_SIZE / LANES)

/* One lane's share of elements [0, len) of a row chunk starting at element `start`: a scalar
 * head up to VLOAD_ALIGNED (none on OpenCL), lane-strided VEC-element loads, a scalar tail.
 * Indices pushed into arg states are the elements' own, whatever the order of loads. */
inline state_t lane_partial(IN_PTR p, const ulong start, const ulong len, const uint lane, const RAW_T pilot) {
    state_t st = st_identity();
#if IN_STATES
    NO_UNROLL
    for (ulong i = lane; i < len; i += LANES) st = st_merge(st, p[i]);
#else
    const ulong head = min((ulong)VLOAD_HEAD(p, VEC), len);
    NO_UNROLL
    for (ulong i = lane; i < head; i += LANES) st = st_push(st, LOAD_ACC(p + i, pilot), start + i);
    __global const IN_T *q = p + head;
    const ulong rest = len - head;
    const ulong full = rest - rest % VEC;
    NO_UNROLL
    for (ulong i = (ulong)lane * VEC; i < full; i += (ulong)LANES * VEC) {
        ACC_T v[VEC];
        load_vec(q + i, v, pilot);
#if OPK == OPK_WELFORD && VEC > 1
        /* a whole vector enters as one (mean, m2, VEC) state: one divide per VEC */
        ACC_T sum = 0;
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) sum += v[j];
        state_t c; c.mean = sum / (ACC_T)VEC; c.m2 = 0; c.c = 0; c.n = VEC;
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) { const ACC_T d = v[j] - c.mean; c.m2 += d * d; }
        st = st_merge(st, c);
#else
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) st = st_push(st, v[j], start + head + i + j);
#endif
    }
    NO_UNROLL
    for (ulong i = full + lane; i < rest; i += LANES) st = st_push(st, LOAD_ACC(q + i, pilot), start + head + i);
#endif
    return st;
}

/* reduce_rows_state: the reduce_rows launch contract (reduce_rows.cl), with state merges.
 * Launch: 1-D, local size WG_SIZE, global size any multiple of it (grid stride over
 * n_rows * SPLIT tasks); writes OUT_T results, or states (OUT_STATES) laid out (n_rows, SPLIT);
 * count divides for FINALIZE 1, param is ddof for var/std. */
__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows_state(IN_PTR in, const ulong in_offset, OUT_PTR out, const ulong out_offset,
                       const ulong n_rows, const ulong row_len, const ulong row_stride,
                       const ulong chunk_len, const ulong count, const ACC_T param)
{
#if LANES > 1 && SG_MODE == SG_LOCAL
    __local state_t scratch[WG_SIZE];
#elif LANES > 1 && LANES > SG_SIZE
    __local state_t scratch[WG_SIZE / SG_SIZE];
#endif
    const uint lid = (uint)get_local_id(0);
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
            /* start < row_len: the planner never makes an empty chunk */
            st = lane_partial(in + in_offset + row * row_stride + start, start, stop - start, lane,
                              ROW_PILOT(in + in_offset + row * row_stride));
        }

#if LANES > 1 && SG_MODE == SG_LOCAL
        scratch[lid] = st;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) scratch[lid] = st_merge(scratch[lid], scratch[lid + s]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        st = scratch[lid];
#elif LANES > 1 && LANES <= SG_SIZE
        st = st_butterfly(st, LANES);
#elif LANES > 1
        /* work-group per row: sub-group partials through local memory */
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
/* reduce_cols: work item -> (outer index, K chunk, block of VEC columns); columns vary
 * fastest so a sub-group reads one contiguous span of the inner axis at each k.
 * Launch: 1-D, local size WG_SIZE, any global size (grid stride over
 * outer * SPLIT * ceil(inner / VEC) items); results or states laid out (outer, SPLIT or 1, inner). */
__kernel KERNEL_WG_SIZE(WG_SIZE)
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
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) st[j] = st_identity();
#if !IN_STATES
        RAW_T pilot[VEC];   /* each column's first element (var/std: see TO_ACC) */
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) pilot[j] = (RAW_T)0;
        for (uint j = 0; j < ncols; ++j) pilot[j] = ROW_PILOT(p + j);
#endif
#if IN_STATES
        NO_UNROLL
        for (ulong k = k0; k < k1; ++k) {
            for (uint j = 0; j < ncols; ++j) st[j] = st_merge(st[j], p[k * k_stride + j]);
        }
#else
        /* vector loads when every k's address is aligned (uniform per work-item) */
        const int vector = ncols == VEC && VLOAD_ALIGNED(p, VEC) && VLOAD_ALIGNED(p + k_stride, VEC);
        NO_UNROLL
        for (ulong k = k0; k < k1; ++k) {
            __global const IN_T *q = p + k * k_stride;
            if (vector) {
                RAW_T raw[VEC];
                VLOAD_RAW(q, raw);
                UNROLL_LOOP
                for (int j = 0; j < VEC; ++j) st[j] = st_push(st[j], TO_ACC(raw[j], pilot[j]), k);
            } else {
                for (uint j = 0; j < ncols; ++j) st[j] = st_push(st[j], LOAD_ACC(q + j, pilot[j]), k);
            }
        }
#endif
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
