/* reduce_state.cl: reductions whose running value is a small struct ("state").
 *
 * Entry points (ENTRY picks one; only that one is compiled):
 *   reduce_rows_state  rows of a (rows, row_len) array, teams of LANES work-items per row
 *                      as in reduce_rows.cl; for var/std (Welford/Chan), argmax/argmin and
 *                      logsumexp, whose merges need more than one value.
 *   reduce_cols        the strided case (outer, K, inner) with inner > 1: each work-item
 *                      owns VEC adjacent columns and walks K, so neighbouring work-items read
 *                      neighbouring addresses. Serves every op (scalar ones are 1-field states).
 *   reduce_rows_state_cpu  (ENTRY 3, CPU devices) rows as reduce_rows_state, one work-item per
 *                      contiguous block of tasks with explicit vector loads; argmax/argmin and
 *                      var/std only (see reduce_rows.cl's reduce_rows_cpu for why).
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
 * MIN_BLOCKS (default 1), UNROLL (ENTRY_ROWS: vector loads in flight per work-item, default
 * UNROLL_DEFAULT: 1 on OpenCL, 4 on CUDA); Welford: SHIFT_MODE (default 0), SHIFT_SCALE
 * (default 1); ENTRY_CPU: WELFORD_BLOCK (var: vector steps per compensated join, default 8).
 */

#define ENTRY_ROWS 1
#define ENTRY_COLS 2
#define ENTRY_CPU 3
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
#define SG_SHUFFLE_PTX 4

#ifndef ENTRY
#error "ENTRY (1 rows, 2 cols, 3 CPU blocks) is required"
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
#if SG_MODE != SG_LOCAL && SG_MODE != SG_SHUFFLE_KHR && SG_MODE != SG_SHUFFLE_QCOM && SG_MODE != SG_SHUFFLE_PTX
#error "reduce_rows_state merges states with shuffles or local memory (SG_MODE 0, 2, 3 or 4)"
#endif
#endif
#if IN_STATES && VEC != 1
#error "a pass over partial states reads one state at a time (VEC 1)"
#endif

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef UNROLL
#define UNROLL UNROLL_DEFAULT
#endif
#if UNROLL < 1 || UNROLL > 8
#error "UNROLL must be 1..8"
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE != SG_LOCAL && FIXED_SG_SIZE && SG_SIZE != FIXED_SG_SIZE
#error "this API has one sub-group width (FIXED_SG_SIZE): SG_SIZE must equal it"
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE == SG_SHUFFLE_QCOM && !HAS_QCOM_SHUFFLE
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no meaning on this API: use 2"
#endif
#if ENTRY == ENTRY_ROWS && SG_MODE == SG_SHUFFLE_PTX && !HAS_WORD_SHUFFLE
#error "SG_MODE 4 (NVIDIA OpenCL's inline-PTX warp shuffle) has no meaning on this API: use 2"
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
/* scaled before the difference (SHIFT_SCALE below), which then never overflows */
#define TO_ACC(raw, pilot) ((ACC_T)(raw) * (ACC_T)SHIFT_SCALE - (ACC_T)(pilot) * (ACC_T)SHIFT_SCALE)
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
 * 2**-32, so squares of differences up to 2**64 stay far below FLT_MAX, and floats summed in
 * their own type, 2**-10: x/1024 - pilot/1024, Welford's differences and block_state's sums of
 * up to 256 such values stay finite for finite x, where x - pilot overflowed (float32 values
 * of +-3e38 in a row: inf - inf in the running mean gave var NaN where numpy's is inf; an inf
 * or NaN element still gives NaN; 1/4 left rusticl's blocks of 16 overflowing). Values below
 * 2**10 times the smallest normal lose bits to it; their squares are below the range.
 * var is scaled back by its inverse square when written. */
#ifndef SHIFT_SCALE
#define SHIFT_SCALE 1
#endif
#define LOAD_ACC(p, pilot) TO_ACC(LOAD_RAW(p), (pilot))

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
/* Chan et al.'s merge; `compensated` (a constant at every call, so the branch folds): m2
 * through st_add_m2 (st_merge), or plainly (st_merge_tree, the butterflies) */
inline state_t chan_merge(state_t x, state_t y, const bool compensated) {
    if (y.n == 0) return x;
    if (x.n == 0) return y;
    const ulong n = x.n + y.n;
    const ACC_T d = y.mean - x.mean;
    const ACC_T wy = (ACC_T)y.n / (ACC_T)n;
    x.mean = x.mean + d * wy;
    if (compensated) {
        x.c += y.c;
        x = st_add_m2(x, y.m2 + d * d * (ACC_T)x.n * wy);
    } else {
        x.m2 = x.m2 + y.m2 + d * d * (ACC_T)x.n * wy;
    }
    x.n = n;
    return x;
}
inline state_t st_merge(state_t x, state_t y) { return chan_merge(x, y, true); }
/* n loaded values as one (mean, m2, n) state, two-pass inside the block: one divide per
 * block instead of one per element. Up to BLOCK_SEQ_MAX values, each pass is one running sum;
 * longer blocks sum into BLOCK_WAYS interleaved partials added pairwise. Why: one running sum
 * over a CUDA lane's UNROLL * VEC = 64 float32 values erred 5.8 ulp on N(0, 1) rows of 64,
 * against numpy's 1.9 (its pairwise sum has 8-wide leaves); 8 partials: 2.0. An exact float32
 * emulation reproduced the H100's figures, and put blocks of 16 within numpy + 2 ulp and
 * blocks of 32 outside it. Partials everywhere cost H100 var 6-10 % on the blocks of 8 (float32
 * 1048576x32) and 32 (float16 442368x128) of the default plans, so they stay where needed: a
 * float16 result's own rounding (2^-11) dwarfs a 64-value running sum's error. n is a
 * compile-time constant at every call: the branch folds. */
#if OUT_HALF
#define BLOCK_SEQ_MAX 64
#else
#define BLOCK_SEQ_MAX 16
#endif
#define BLOCK_WAYS 8
inline ACC_T ways_total(const ACC_T *w) {
    return ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
}
inline state_t block_state(const ACC_T *v, const int n) {
    state_t c; c.m2 = 0; c.c = 0; c.n = (ulong)n;
    if (n <= BLOCK_SEQ_MAX) {
        ACC_T sum = 0;
        UNROLL_LOOP
        for (int j = 0; j < n; ++j) sum += v[j];
        c.mean = sum / (ACC_T)n;
        UNROLL_LOOP
        for (int j = 0; j < n; ++j) { const ACC_T d = v[j] - c.mean; c.m2 += d * d; }
        return c;
    }
    ACC_T w[BLOCK_WAYS];
    UNROLL_LOOP
    for (int k = 0; k < BLOCK_WAYS; ++k) w[k] = 0;
    UNROLL_LOOP
    for (int j = 0; j < n; ++j) w[j % BLOCK_WAYS] += v[j];
    c.mean = ways_total(w) / (ACC_T)n;
    UNROLL_LOOP
    for (int k = 0; k < BLOCK_WAYS; ++k) w[k] = 0;
    UNROLL_LOOP
    for (int j = 0; j < n; ++j) { const ACC_T d = v[j] - c.mean; w[j % BLOCK_WAYS] += d * d; }
    c.m2 = ways_total(w);
    return c;
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
/* st_merge(s, {v, k}) for a k above every index already in s (each work-item pushes its
 * elements in increasing index order): v wins by beating s.v outright (a NaN beats every
 * number; a NaN in s is never replaced), and any element replaces the identity (index
 * ULONG_MAX, whose high word no real index has), -inf included. A third of st_merge's
 * instructions per element: argmax is bound by them on an H100, float16 most. */
inline state_t st_push(state_t s, ACC_T v, ulong k) {
#if ACC_IS_FLOAT && defined(ARG_MAX)
    const bool wins = !(v <= s.v) && s.v == s.v;  /* v > s.v, or v is NaN and s.v is not */
#elif ACC_IS_FLOAT
    const bool wins = !(v >= s.v) && s.v == s.v;
#else
    const bool wins = BEATS(v, s.v);
#endif
    if (wins || (uint)(s.i >> 32) == 0xffffffffu) { s.v = v; s.i = k; }
    return s;
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

#include "shuffle_xor.h"
/* 64-bit counts and indices: one shuffle where KHR's takes a ulong, else two words */
#if SG_MODE == SG_SHUFFLE_KHR
inline ulong shuffle_u64(ulong v, uint m) { return sub_group_shuffle_xor(v, m); }
#elif SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX
inline ulong shuffle_u64(ulong v, uint m) {
    uint2 u = as_uint2(v);
    u.x = shuffle_word(u.x, m);
    u.y = shuffle_word(u.y, m);
    return as_ulong(u);
}
#endif
#if SG_MODE != SG_LOCAL
inline state_t st_shuffle_xor(state_t s, uint m) {
#if OPK == OPK_SCALAR
    s.a = shuffle_xor(s.a, m);
#elif OPK == OPK_WELFORD
    /* c is 0 here: st_butterfly folds it into m2 first */
    s.mean = shuffle_xor(s.mean, m); s.m2 = shuffle_xor(s.m2, m); s.n = shuffle_u64(s.n, m);
#elif OPK == OPK_ARG
    s.v = shuffle_xor(s.v, m); s.i = shuffle_u64(s.i, m);
#elif OPK == OPK_WIDE
    s.lo = shuffle_u64(s.lo, m); s.hi = (long)shuffle_u64((ulong)s.hi, m);
#else
    s.m = shuffle_xor(s.m, m); s.s = shuffle_xor(s.s, m);
#endif
    return s;
}
#if OPK == OPK_WELFORD
/* A butterfly is a tree of log2(width) merges, whose roundings add up like a pairwise sum's
 * (the compensation is for a lane's long chain of merges): each state's correction c is
 * folded into m2 once and the tree merges plainly, without c's shuffle and TwoSum. On an
 * H100 they had cost float32 var / std of 1048576x32 (teams of 4 lanes) 3.5 / 4.5 % against
 * d81e80a (before the compensation); now 0.2 / 1 % (benchmarks/var_tree_h100_2026-11-25). */
inline state_t st_merge_tree(state_t x, state_t y) { return chan_merge(x, y, false); }
#endif
inline state_t st_butterfly(state_t s, const uint width) {
#if OPK == OPK_WELFORD
    s.m2 += s.c;  /* c is 0 where m2 is not finite (st_add_m2) */
    s.c = 0;
#define ST_TREE_MERGE st_merge_tree
#else
#define ST_TREE_MERGE st_merge
#endif
    UNROLL_LOOP
    for (uint m = width >> 1; m > 0; m >>= 1) {
        s = ST_TREE_MERGE(s, st_shuffle_xor(s, m));
    }
#undef ST_TREE_MERGE
    return s;
}
#endif

#define TEAMS (WG_SIZE / LANES)

/* LANE_PILOTS: var/std of float16 rows whose team of lanes merges by a sub-group butterfly
 * lets each lane shift by the first element it loads itself (lane_partial) and moves the
 * states to the row's pilot (lane 0's) afterwards; elsewhere every lane shifts by the row's
 * first element. H100, kernel time against d81e80a (benchmarks/var_lane_pilots_h100_2026-11-26):
 * float16 442368x128 (4 lanes) 0.91 with every lane loading the row's first element, 0.985-0.99
 * with lane pilots; float32 1048576x32 (4 lanes of 8 elements) 0.998 loading it, 0.93-0.95 with
 * lane pilots (the two shuffles cost more than a load the lanes share), so float32 loads it.
 * Float shifts only (SHIFT_MODE 0: a moved mean is one more rounding, which integer shifts were
 * made exact to avoid). */
#if OPK == OPK_WELFORD && SHIFT_MODE == 0 && IN_HALF && !IN_STATES && LANES > 1 && LANES <= SG_SIZE && \
    SG_MODE != SG_LOCAL
#define LANE_PILOTS 1
/* Lane 0's pilot to every lane of its team, by xor shuffles (the one shuffle every
 * sub-group mode has): at step m a lane with bit m set takes its partner's value, so after
 * log2(LANES) steps lane l holds lane (l & ~(LANES - 1))'s. Then each lane's mean, relative
 * to its own pilot, is moved to the row's: (x - p) + (p - p0). Called where the whole
 * sub-group is converged (before the butterfly). */
inline state_t team_to_row_pilot(state_t st, const ACC_T pilot, const uint lane) {
    ACC_T row_pilot = pilot;
    UNROLL_LOOP
    for (uint m = 1; m < LANES; m <<= 1) {
        const ACC_T other = shuffle_xor(row_pilot, m);
        if (lane & m) row_pilot = other;
    }
    if (st.n > 0) st.mean += pilot * (ACC_T)SHIFT_SCALE - row_pilot * (ACC_T)SHIFT_SCALE;
    return st;
}
#else
#define LANE_PILOTS 0
#endif

/* One lane's share of elements [0, len) of a row chunk starting at element `start`: a scalar
 * head up to VLOAD_ALIGNED (none on OpenCL), lane-strided VEC-element loads, a scalar tail.
 * Indices pushed into arg states are the elements' own, whatever the order of loads. */
inline state_t lane_partial(IN_PTR p, const ulong start, const ulong len, const uint lane, IN_PTR row,
                            ACC_T *used_pilot) {
    state_t st = st_identity();
    *used_pilot = 0;
#if IN_STATES
    NO_UNROLL
    for (ulong i = lane; i < len; i += LANES) st = st_merge(st, p[i]);
#else
    const ulong head = min((ulong)VLOAD_HEAD(p, VEC), len);
    const ulong rest = len - head;
    const ulong full = rest - rest % VEC;
#if OPK == OPK_WELFORD
    /* var/std: the row's pilot (TO_ACC). With one lane per row, a lane whose first vector
     * starts at the row's first element takes it from that vector (TAKE_PILOT) instead of
     * loading it again: on an H100 that second load cost float16 1048576x32 var 7 % (0.922 of
     * d81e80a's speed; 0.996 without it). In a float16 butterfly team (LANE_PILOTS) every other
     * lane takes the first element of its own first vector instead, and the team moves its
     * states to the row's pilot before merging (team_to_row_pilot). A lane with no whole vector
     * (or a split chunk's lane 0) loads the row's first element, as every lane does elsewhere. */
#if LANE_PILOTS
    bool take = head == 0 && full > (ulong)lane * VEC && (lane != 0 || start == 0);
#else
    bool take = LANES == 1 && start == 0 && head == 0 && full > 0;
#endif
    RAW_T pilot = 0;
    if (!take) pilot = LOAD_RAW(row);
#define TAKE_PILOT(raw) if (take) { pilot = (raw)[0]; take = false; }
#else
    const RAW_T pilot = 0;   /* TO_ACC ignores it here */
    (void)pilot;             /* nvcc -Werror: declared but never referenced */
#define TAKE_PILOT(raw)
#endif
    NO_UNROLL
    for (ulong i = lane; i < head; i += LANES) st = st_push(st, LOAD_ACC(p + i, pilot), start + i);
    __global const IN_T *q = p + head;
    const ulong step = (ulong)LANES * VEC;
    ulong iv = (ulong)lane * VEC;
#if UNROLL > 1
    /* UNROLL vectors loaded before any is used: loads in flight hide memory latency */
    NO_UNROLL
    for (; iv + (UNROLL - 1) * step < full; iv += UNROLL * step) {
        RAW_T raw[UNROLL * VEC];
        UNROLL_LOOP
        for (int u = 0; u < UNROLL; ++u) VLOAD_RAW(q + iv + u * step, raw + u * VEC);
        TAKE_PILOT(raw)
        ACC_T v[UNROLL * VEC];
        UNROLL_LOOP
        for (int j = 0; j < UNROLL * VEC; ++j) v[j] = TO_ACC(raw[j], pilot);
#if OPK == OPK_WELFORD
        st = st_merge(st, block_state(v, UNROLL * VEC));
#else
        UNROLL_LOOP
        for (int u = 0; u < UNROLL; ++u) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) st = st_push(st, v[u * VEC + j], start + head + iv + u * step + j);
        }
#endif
    }
#endif
    NO_UNROLL
    for (; iv < full; iv += step) {
        RAW_T raw[VEC];
        VLOAD_RAW(q + iv, raw);
        TAKE_PILOT(raw)
        ACC_T v[VEC];
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) v[j] = TO_ACC(raw[j], pilot);
#if OPK == OPK_WELFORD && VEC > 1
        st = st_merge(st, block_state(v, VEC));
#else
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) st = st_push(st, v[j], start + head + iv + j);
#endif
    }
    NO_UNROLL
    for (ulong i = full + lane; i < rest; i += LANES) st = st_push(st, LOAD_ACC(q + i, pilot), start + head + i);
#undef TAKE_PILOT
#if OPK == OPK_WELFORD
    *used_pilot = (ACC_T)pilot;
#endif
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
        ACC_T pilot = 0;   /* the shift lane_partial used (var/std) */
        if (task < n_tasks) {
            const ulong row = task / SPLIT;
            const ulong start = (task % SPLIT) * chunk_len;
            const ulong stop = min(start + chunk_len, row_len);
            /* start < row_len: the planner never makes an empty chunk */
            st = lane_partial(in + in_offset + row * row_stride + start, start, stop - start, lane,
                              in + in_offset + row * row_stride, &pilot);
        }
#if LANE_PILOTS
        st = team_to_row_pilot(st, pilot, lane);
#else
        (void)pilot;
#endif

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

/* ---- CPU blocks ------------------------------------------------------------------------ */
#if ENTRY == ENTRY_CPU
/* reduce_rows_state_cpu: the reduce_rows_state contract (same arguments, tasks and output
 * layout), except that work-item w of the get_global_size(0) in the grid owns tasks
 * [w * per, min((w + 1) * per, n_tasks)), per = ceil(n_tasks / global size), and reads them
 * with explicit vectors (reduce_rows.cl's CPU block explains why CPU runtimes need this).
 * Compiled only with ENTRY 3, which CUDA plans never use, so vector types are allowed here.
 *   argmax/argmin: a vector of best values and a vector of the steps where each lane saw
 *     its best (select, no branch), then the lanes merged by value and index.
 *   var/std: Welford per vector lane (all lanes share the count, so one reciprocal per
 *     vector), two lane groups against the add latency, then Chan's merge of the lanes
 *     by halves (equal counts). Elements less the row's pilot (TO_ACC) as everywhere; m2
 *     adds WELFORD_BLOCK steps plainly, then joins a compensated (Kahan) pair per lane.
 *   wide integer sums (an integer mean that could wrap): two 64-bit words per vector lane
 *     (OPK_WIDE), folded by halves.
 *   IN_STATES (a split's second pass): the task's partial states merged in order. */
#if OPK != OPK_ARG && OPK != OPK_WELFORD && OPK != OPK_WIDE
#error "reduce_rows_state_cpu serves argmax/argmin, var/std and wide sums (OPK 1, 2 or 4)"
#endif

/* loads and built-ins as vectors, spelled for PoCL 3.0 (cpu_vec.h says why). float16 in
 * vectors of up to 8 where the compiler has F16C (cpu_vec.h CPU_HALF_F16C): the bits widened
 * by vcvtph2ps. argmax/argmin then tell a NaN by its bits (CPU_ARG_HALF_BITS) -- a NaN test of
 * the widened value is narrowed by LLVM back to scalar half compares (row_scale.cl's |x| fell
 * into it); var/std's Welford walk compares no loaded value. pip's PoCL (znver3, VEC 8):
 * argmax/argmin 2.4-3.1x faster, var/std 1.4-2.1x. Debian's PoCL (skylake-avx512, VEC 16) ran
 * argmax 10-20 % slower so, var/std level to 0.6x, and keeps vload_half16. */
#if ((OPK == OPK_ARG && ACC_BYTES == 4) || OPK == OPK_WELFORD) && IN_HALF && VEC <= 8
#define CPU_HALF_F16C 1
#endif
#include "cpu_vec.h"
#if OPK == OPK_ARG && IN_HALF && CPU_HALF_BITS
#define CPU_ARG_HALF_BITS 1
#else
#define CPU_ARG_HALF_BITS 0
#endif

#if OPK == OPK_ARG
/* Lane j of the best-value vector keeps the best of elements j, j + VEC, ... and the vector
 * step where it was first seen; a later element replaces it only if strictly better, or a
 * NaN replacing a number (numpy's rule: the first NaN wins), so each lane keeps its first
 * best. Step counters are integers as wide as ACC_T (select() needs equal widths). */
#if ACC_BYTES == 8
#define CPU_IDX_T long
#else
#define CPU_IDX_T int
#endif
#define CPU_IDXV CPU_V(CPU_IDX_T)
#if defined(ARG_MAX)
#define CPU_STRICT(a, b) ((a) > (b))
#else
#define CPU_STRICT(a, b) ((a) < (b))
#endif
#if ACC_IS_FLOAT
#define CPU_TAKES_NAN(v, v_nan, best) (CPU_STRICT(v, best) || ((v_nan) && (best) == (best)))
#define CPU_TAKES(v, best) CPU_TAKES_NAN(v, CPU_ISNAN(v), best)
#else
#define CPU_TAKES(v, best) CPU_STRICT(v, best)
#endif

/* b beats a, or ties it (both NaN included) at a lower index: lane by lane */
#if ACC_IS_FLOAT
#define CPU_BETTER(va, ia, vb, ib) \
    (CPU_TAKES(vb, va) || (((vb) == (va) || (CPU_ISNAN(vb) && CPU_ISNAN(va))) && (ib) < (ia)))
#else
#define CPU_BETTER(va, ia, vb, ib) (CPU_STRICT(vb, va) || ((vb) == (va) && (ib) < (ia)))
#endif
/* halve (v, i) of width w into (nv, ni) of width w / 2 */
#define CPU_HALVE(w, v, i, nv, ni) \
    const CAT(ACC_T, w) nv##_a = (v).lo, nv##_b = (v).hi; \
    const CAT(CPU_IDX_T, w) ni##_a = (i).lo, ni##_b = (i).hi; \
    const CAT(CPU_IDX_T, w) nv##_c = CPU_BETTER(nv##_a, ni##_a, nv##_b, ni##_b); \
    const CAT(ACC_T, w) nv = nv##_c ? nv##_b : nv##_a; \
    const CAT(CPU_IDX_T, w) ni = nv##_c ? ni##_b : ni##_a;
#if VEC == 2
#define CPU_IOTA ((CPU_IDXV)(0, 1))
#elif VEC == 4
#define CPU_IOTA ((CPU_IDXV)(0, 1, 2, 3))
#elif VEC == 8
#define CPU_IOTA ((CPU_IDXV)(0, 1, 2, 3, 4, 5, 6, 7))
#elif VEC == 16
#define CPU_IOTA ((CPU_IDXV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#endif

inline state_t cpu_task(__global const IN_T *p, const ulong start, const ulong len, const RAW_T pilot) {
    CPU_ACCV best = (CPU_ACCV)(IDENTITY);
    CPU_IDXV step = (CPU_IDXV)(0);
    CPU_IDX_T it = 0;
    ulong i = 0;
    for (; i + VEC <= len; i += VEC, ++it) {
#if CPU_ARG_HALF_BITS
        const CPU_V(ushort) bits = CPU_VLOAD(ushort, (__global const ushort *)(p + i));
        const CPU_ACCV v = cpu_half_bits_to_float(bits);
        const CPU_IDXV v_nan = CAT(convert_, CPU_IDXV)(CAT(as_, CPU_V(short))((bits & (ushort)0x7fff) > (ushort)0x7c00));
        const CPU_IDXV take = CPU_TAKES_NAN(v, v_nan, best);
#else
        const CPU_ACCV v = CPU_LOAD_ACC(p + i);
        const CPU_IDXV take = CPU_TAKES(v, best);
#endif
        best = take ? v : best;
        step = take ? (CPU_IDXV)(it) : step;
    }
    state_t st = st_identity();
    if (it > 0) {
        /* a lane that never took holds IDENTITY at step 0: its first element, which then
         * equals IDENTITY, so its index is right too. Fold lanes in halves. */
#if VEC == 1
        st.v = best;
        st.i = start + (ulong)step;
#else
        const CPU_IDXV idx = step * (CPU_IDX_T)VEC + CPU_IOTA;
#if VEC == 16
        CPU_HALVE(8, best, idx, v8, i8)
#elif VEC == 8
        const CAT(ACC_T, 8) v8 = best;
        const CAT(CPU_IDX_T, 8) i8 = idx;
#endif
#if VEC >= 8
        CPU_HALVE(4, v8, i8, v4, i4)
#elif VEC == 4
        const CAT(ACC_T, 4) v4 = best;
        const CAT(CPU_IDX_T, 4) i4 = idx;
#endif
#if VEC >= 4
        CPU_HALVE(2, v4, i4, v2, i2)
#else
        const CAT(ACC_T, 2) v2 = best;
        const CAT(CPU_IDX_T, 2) i2 = idx;
#endif
        const int last = CPU_BETTER(v2.x, i2.x, v2.y, i2.y);
        st.v = last ? v2.y : v2.x;
        st.i = start + (ulong)(last ? i2.y : i2.x);
#endif
    }
    for (; i < len; ++i) st = st_push(st, LOAD_ACC(p + i, pilot), start + i);
    return st;
}

#elif OPK == OPK_WIDE
/* value = hi * 2**64 + lo per vector lane, as st_push: a wrapped low word carries, a
 * negative element adds its sign extension (-1) to hi */
#define CPU_ULV CPU_V(ulong)
#define CPU_LV CPU_V(long)
#define CPU_AS_ULV(x) CAT(as_, CPU_ULV)(x)
/* merge the halves of (lo, hi) of width 2w into (nl, nh) of width w */
#define CPU_WIDE_HALVE(w, l, h, nl, nh) \
    const CAT(ulong, w) nl = (l).lo + (l).hi; \
    const CAT(long, w) nh = (h).lo + (h).hi - (nl < (l).lo);
inline state_t cpu_task(__global const IN_T *p, const ulong start, const ulong len, const RAW_T pilot) {
    CPU_ULV lo = (CPU_ULV)(0);
    CPU_LV hi = (CPU_LV)(0);
    ulong i = 0;
    for (; i + VEC <= len; i += VEC) {
        const CPU_ACCV v = CPU_LOAD_ACC(p + i);
        const CPU_ULV l = lo + CPU_AS_ULV(v);
        hi -= CPU_MASK(l < lo);
#if WIDE_SIGNED
        hi += CPU_MASK(v < (CPU_ACCV)(0));
#endif
        lo = l;
    }
    state_t st;
#if VEC == 1
    st.lo = lo; st.hi = hi;
#else
#if VEC == 16
    CPU_WIDE_HALVE(8, lo, hi, l8, h8)
#elif VEC == 8
    const ulong8 l8 = lo; const long8 h8 = hi;
#endif
#if VEC >= 8
    CPU_WIDE_HALVE(4, l8, h8, l4, h4)
#elif VEC == 4
    const ulong4 l4 = lo; const long4 h4 = hi;
#endif
#if VEC >= 4
    CPU_WIDE_HALVE(2, l4, h4, l2, h2)
#else
    const ulong2 l2 = lo; const long2 h2 = hi;
#endif
    st.lo = l2.x + l2.y;
    st.hi = h2.x + h2.y + (long)(st.lo < l2.x);
#endif
    for (; i < len; ++i) st = st_push(st, LOAD_ACC(p + i, pilot), start + i);
    return st;
}

#else /* OPK_WELFORD */
/* Lanes that saw the same count c merge pairwise by Chan's update, which for equal counts
 * is mean = (ma + mb) / 2, m2 = m2a + m2b + d * d * c / 2 (d = mb - ma); the count doubles.
 * Halving the vectors this way needs no private array (no vstore: a call on PoCL). */
#define CPU_WHALVE(w, m, q, c, nm, nq) \
    const CAT(ACC_T, w) nm##_d = (m).hi - (m).lo; \
    const CAT(ACC_T, w) nm = (m).lo + nm##_d * (ACC_T)0.5; \
    const CAT(ACC_T, w) nq = (q).lo + (q).hi + nm##_d * nm##_d * ((c) * (ACC_T)0.5);

/* x - pilot for a vector (TO_ACC's SHIFT_MODEs 0 and 1; 64-bit integers run VEC 1) */
#if SHIFT_MODE == 0
#define CPU_SHIFTED(x, pilot) (CPU_TO_ACC(x) * (ACC_T)SHIFT_SCALE - (CPU_ACCV)((ACC_T)(pilot) * (ACC_T)SHIFT_SCALE))
#elif SHIFT_MODE == 1
#define CPU_SHIFTED(x, pilot) CPU_TO_ACC(CAT(convert_, CPU_V(long))(x) - (CPU_V(long))((long)(pilot)))
#elif VEC == 1
#define CPU_SHIFTED(x, pilot) TO_ACC((x), (pilot))
#else
#error "reduce_rows_state_cpu: var/std of 64-bit integers (SHIFT_MODE 2, 3) needs VEC 1"
#endif
/* steps (two vectors each) whose m2 terms add plainly before joining the compensated pair:
 * at most WELFORD_BLOCK + 1 roundings of eps / 2 per lane (README, Tolerances: var); 0 (the
 * planner, where every task is one block) runs the plain loop */
#ifndef WELFORD_BLOCK
#define WELFORD_BLOCK 8
#endif

inline state_t cpu_task(__global const IN_T *p, const ulong start, const ulong len, const RAW_T pilot) {
    CPU_ACCV mean0 = (CPU_ACCV)(0), m20 = (CPU_ACCV)(0), mean1 = (CPU_ACCV)(0), m21 = (CPU_ACCV)(0);
    CPU_ACCV m2s = (CPU_ACCV)(0), m2c = (CPU_ACCV)(0);   /* compensated m2 of both groups */
    ulong n = 0, i = 0;
    for (;;) {
        const ulong stop = WELFORD_BLOCK ? CPU_MIN_U64(i + (ulong)WELFORD_BLOCK * 2 * VEC, len) : len;
        for (; i + 2 * VEC <= stop; i += 2 * VEC) {
            n += 1;
            const CPU_ACCV r = (CPU_ACCV)((ACC_T)1 / (ACC_T)n);
            const CPU_ACCV x0 = CPU_SHIFTED(CPU_LOAD(p + i), pilot), x1 = CPU_SHIFTED(CPU_LOAD(p + i + VEC), pilot);
            const CPU_ACCV d0 = x0 - mean0, d1 = x1 - mean1;
            mean0 += d0 * r;
            mean1 += d1 * r;
            m20 += d0 * (x0 - mean0);
            m21 += d1 * (x1 - mean1);
        }
        if (!WELFORD_BLOCK) break;
        /* Kahan join; once m2 is inf or NaN (t - t not 0) the correction is dropped */
        const CPU_ACCV y = (m20 + m21) + m2c;
        const CPU_ACCV t = m2s + y;
        const CPU_ACCV e = y - (t - m2s);
        m2c = (t - t) == (CPU_ACCV)(0) ? e : (CPU_ACCV)(0);
        m2s = t;
        m20 = (CPU_ACCV)(0);
        m21 = (CPU_ACCV)(0);
        if (stop == len) break;
    }
    state_t st = st_identity();
    if (n > 0) {
        /* the two lane groups (count n each), then the lanes of one vector by halves */
        const CPU_ACCV d = mean1 - mean0;
        const CPU_ACCV mean = mean0 + d * (ACC_T)0.5;
        const CPU_ACCV m2 = (WELFORD_BLOCK ? m2s + m2c : m20 + m21) + d * d * ((ACC_T)n * (ACC_T)0.5);
        ACC_T c = (ACC_T)(2 * n);
#if VEC == 1
        st.mean = mean; st.m2 = m2;
#else
#if VEC == 16
        CPU_WHALVE(8, mean, m2, c, mean8, m28)
        c *= 2;
#elif VEC == 8
        const CAT(ACC_T, 8) mean8 = mean, m28 = m2;
#endif
#if VEC >= 8
        CPU_WHALVE(4, mean8, m28, c, mean4, m24)
        c *= 2;
#elif VEC == 4
        const CAT(ACC_T, 4) mean4 = mean, m24 = m2;
#endif
#if VEC >= 4
        CPU_WHALVE(2, mean4, m24, c, mean2, m22)
        c *= 2;
#else
        const CAT(ACC_T, 2) mean2 = mean, m22 = m2;
#endif
        const ACC_T dd = mean2.y - mean2.x;
        st.mean = mean2.x + dd * (ACC_T)0.5;
        st.m2 = m22.x + m22.y + dd * dd * (c * (ACC_T)0.5);
#endif
        st.n = 2 * n * VEC;
    }
    for (; i < len; ++i) st = st_push(st, LOAD_ACC(p + i, pilot), start + i);
    return st;
}
#endif

__kernel KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows_state_cpu(IN_PTR in, const ulong in_offset, OUT_PTR out, const ulong out_offset,
                           const ulong n_rows, const ulong row_len, const ulong row_stride,
                           const ulong chunk_len, const ulong count, const ACC_T param)
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
        IN_PTR p = in + in_offset + row * row_stride + start;
#if IN_STATES
        state_t st = st_identity();
        for (ulong i = 0; i < stop - start; ++i) st = st_merge(st, p[i]);
#else
        const state_t st = cpu_task(p, start, stop - start, ROW_PILOT(in + in_offset + row * row_stride));
#endif
#if OUT_STATES
        out[out_offset + task] = st;
#else
        st_write(out, out_offset + task, st, count, param);
#endif
    }
}
#endif /* ENTRY_CPU */
