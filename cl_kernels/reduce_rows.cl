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
 * for, CUDA's __launch_bounds__; default 1), NBLK (reduce_cols: vectors per work-item),
 * ACC_BLOCK / COL_BLOCK (float sums' block lengths, see "accumulation"; defaults 32 / 128).
 */

/* team_common.h: sub-group modes and their checks, SG_ATTR, CAT, shuffle_xor, TEAMS */
#include "team_common.h"

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
#ifndef IDENTITY
#error "IDENTITY (neutral value of the op in ACC_T) is required"
#endif
#ifndef VEC
#error "VEC (elements per vector load: 1, 2, 4, 8, 16) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row, 1 = no split) is required"
#endif
#ifndef FINALIZE
#error "FINALIZE (0 none, 1 mean, 2 sqrt) is required"
#endif
#ifndef UNROLL
#define UNROLL UNROLL_DEFAULT
#endif
#ifndef NBLK
#define NBLK 1
#endif


#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 1, 2, 4, 8 or 16"
#endif
#if UNROLL < 1 || UNROLL > 8
#error "UNROLL must be 1..8"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && (defined(OP_PROD) || defined(OP_NANMAX) || defined(OP_NANMIN))
#error "no sub-group built-in for prod, and built-in max/min leave NaN unspecified: use a shuffle mode"
#endif

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

/* ---- accumulation: how float sums keep their accuracy (issue 8 item 3) -----------------
 * Added one after another, K floats err by up to K * eps * sum|x| (a float32 lane stops at
 * 2**24 ones). So float sums (OP_SUM with a float ACC_T: sum, mean, nansum, norms) carry a
 * compensated value, outer_t = (s, c) meaning s + c, through every step:
 *   lanes   add in blocks: the VEC plain accumulators of the vector loads take ACC_BLOCK
 *           loads each (the hot loop is the uncompensated one), then the block's total
 *           (hreduce) joins the lane's outer_t with a Kahan add: a few ops per block. A lane
 *           errs by at most about (ACC_BLOCK + log2(VEC) + 2) * eps * sum|x| whatever its
 *           length, typically far less (blocks err independently). numpy's pairwise sum has
 *           16-element blocks plus a tree of log2(K / 128) levels; ACC_BLOCK 16 cost PoCL
 *           about 9 % on long rows, 32 about 4 % (measured on 2048 x 4096, 8192 x 1000).
 *           CPU plans (cpu_block) and one-lane rows take blocks of 16 on eight accumulators
 *           instead, at the join rate of 32 on four (plan.py CPU_SUM_UNROLL).
 *   columns reduce_cols walks K per column: each column's accumulator takes COL_BLOCK rows,
 *           then joins its own outer_t (numpy sums a non-last axis row after row: K * eps).
 *           COL_BLOCK 32 cost PoCL 13 % on 8192 x 1024 (axis 0), 128 about 2 %.
 *   short   the planner gives ACC_BLOCK / COL_BLOCK 0 where no lane or work-item holds more
 *           than one block: those run the plain code (a branch on a runtime "joined" flag
 *           cost Intel's runtime 12 % on 1048576 x 32 rows: it vectorises across work-items).
 *   teams   lanes merge (s, c) pairs with TwoSum (local-memory tree, shuffle butterfly), so
 *           the team reduce adds no error of its own; the built-in sub_group_reduce_add,
 *           whose order is the driver's (Intel's width 64 erred by 7 ulp), gets error-free
 *           parts instead (sg_reduce below).
 *   output  s + c rounded once (split_k partials too, then summed the same way); a mean
 *           divides s and c before adding them.
 * For every other op (integer sums, prod, max, min) ACC_COMPENSATED is 0: outer_t is one
 * ACC_T combined with COMBINE, there are no blocks, and the code is the plain one.
 * No build option of either API allows reassociation (no -cl-fast-relaxed-math /
 * -cl-unsafe-math-optimizations, no --use_fast_math: clreduce/kernels.py), so (t - s) - y is
 * evaluated as written; contraction into FMA (OpenCL's default FP_CONTRACT, NVRTC's -fmad)
 * only meets MAP_SQUARE's x * x + acc (an FMA is more exact) and products by powers of two
 * (exact either way).
 *
 * The words, for any lane loop or team reduce of this file:
 *   outer_t                       the compensated value (one ACC_T when not compensated)
 *   outer_init(), outer_wrap(v)   the identity / a plain value
 *   outer_add(o, v)               o + v, Kahan (a block's total, a column's block)
 *   outer_merge(a, b)             a + b, TwoSum (team reduces: lanes' values of any size)
 *   outer_value(o), outer_mean(o, n)   the result, rounded once
 *   ACC_BLOCK, COL_BLOCK          block lengths (vector loads per lane; K steps per column);
 *                                 ACC_BLOCKED, COL_BLOCKED whether blocks exist at all
 *   BLOCK_STOP(i, end, span)      where a block starting at i stops (span 0: one block)
 *   BLOCK_DONE(i, end), BLOCK_DONE_IF(blocked, i, end)   leave the block loop
 */
#if defined(OP_SUM) && ACC_IS_FLOAT
#define ACC_COMPENSATED 1
#else
#define ACC_COMPENSATED 0
#endif
#ifndef ACC_BLOCK
#define ACC_BLOCK 32
#endif
#ifndef COL_BLOCK
#define COL_BLOCK 128
#endif

/* blocks in lane_partial: float sums whose lanes may hold more than one block */
#define ACC_BLOCKED (ACC_COMPENSATED && ACC_BLOCK > 0)
#define COL_BLOCKED (ACC_COMPENSATED && COL_BLOCK > 0)

#if ACC_COMPENSATED
typedef struct { ACC_T s; ACC_T c; } outer_t;
inline outer_t outer_init(void) { outer_t o; o.s = (ACC_T)0; o.c = (ACC_T)0; return o; }
/* Kahan: y is v plus the part of the last add that was lost; c = y - (t - s) is what this
 * add loses. Once the sum is inf or NaN, t - s is NaN: the correction is dropped. */
inline outer_t outer_add(outer_t o, const ACC_T v) {
    const ACC_T y = v + o.c;
    const ACC_T t = o.s + y;
    const ACC_T e = y - (t - o.s);
    o.c = fabs(t) < INFINITY ? e : (ACC_T)0;
    o.s = t;
    return o;
}
/* TwoSum (Knuth): e is exactly a.s + b.s - s, whatever the magnitudes. */
inline outer_t outer_merge(outer_t a, const outer_t b) {
    const ACC_T t = a.s + b.s;
    const ACC_T bb = t - a.s;
    const ACC_T e = (a.s - (t - bb)) + (b.s - bb);
    const ACC_T c = a.c + b.c + e;
    a.c = fabs(t) < INFINITY ? c : (ACC_T)0;
    a.s = t;
    return a;
}
inline outer_t outer_wrap(const ACC_T v) { outer_t o; o.s = v; o.c = (ACC_T)0; return o; }
inline ACC_T outer_value(const outer_t o) { return o.s + o.c; }
/* (s + c) / n without rounding s + c first: the mean keeps the sum's extra accuracy */
inline ACC_T outer_mean(const outer_t o, const ACC_T n) { return o.s / n + o.c / n; }
#else
typedef struct { ACC_T s; } outer_t;
inline outer_t outer_init(void) { outer_t o; o.s = IDENTITY; return o; }
inline outer_t outer_add(outer_t o, const ACC_T v) { o.s = COMBINE(o.s, v); return o; }
inline outer_t outer_merge(outer_t a, const outer_t b) { a.s = COMBINE(a.s, b.s); return a; }
inline outer_t outer_wrap(const ACC_T v) { outer_t o; o.s = v; return o; }
inline ACC_T outer_value(const outer_t o) { return o.s; }
inline ACC_T outer_mean(const outer_t o, const ACC_T n) { return o.s / n; }
#endif
/* mean_div: a mean's divide, (s + c) / n, without a divide: q = s * inv, with inv = 1 / n
 * correctly rounded by the host (the argument mean_inv; plan.reciprocal), then one correction
 * by the remainder s - q n (exact in an fma) plus c: (s + c) / n correctly rounded up to c's
 * own rounding (Markstein's theorem: inv within half an ulp of 1 / n, q within an ulp of s / n,
 * no underflow). Near the bottom of the range (the remainder would round in subnormals), for 0
 * and where q is not finite (inf - inf in the remainder) it divides. For teams of lanes: their
 * two IEEE divides had cost float32 means over rows of 16 10 % of sum's speed on an H200 (3591
 * against 3985 GB/s, every other define alike; 3957 with mean_div), float64 rows of 8-16
 * 17-21 %; 1 / n made per work-item instead cost rows of 32 6 % (about a row a team there). */
#if FINALIZE == FIN_MEAN
inline ACC_T mean_div(const ACC_T s, const ACC_T c, const ACC_T n, const ACC_T inv) {
    const ACC_T q = s * inv;
    if (!(fabs(q) >= (ACC_T)0x1p-100f && fabs(q) < (ACC_T)INFINITY)) {
        return s / n + c / n;
    }
    return fma(fma(-q, n, s) + c, inv, q);
}
#endif
/* a block loop from i: where the block stops (span 0: one block to the end), and whether the
 * loop is done; BLOCKED is a compile-time 0/1, so unblocked code runs the loop body once */
#define BLOCK_STOP(i, end, span) ((span) && (i) + (span) < (end) ? (i) + (span) : (end))
#define BLOCK_DONE_IF(blocked, i, end) (!(blocked) || (i) >= (end))
#define BLOCK_DONE(i, end) BLOCK_DONE_IF(ACC_BLOCKED, (i), (end))

/* ---- sums past the float range (issue 8) ----------------------------------------------
 * A float sum of signed terms can overflow in its partial sums although its value is finite:
 * [3e38, -3e38, 1e38, 2e38] is 3e38, but a lane that adds 3e38 + 1e38 first reaches inf, and
 * rusticl's order gave inf - inf = NaN; numpy's pairwise order overflows on other rows (its
 * sum of [3e38, 3e38, -3e38, -3e38, 1e30] is inf). So a task whose result comes out inf or
 * NaN is summed again by its writing work-item alone, every term times 2^-e with 2^e > 2n for
 * n terms: no partial sum of finite terms can then pass half the range, an inf term stays inf
 * and inf - inf stays NaN. Scaled back, the result is +-inf only where the true sum (or mean)
 * passes the range or the data hold an infinity, NaN where they hold a NaN or both
 * infinities; a mean divides before scaling back, so it is finite wherever the true mean is
 * (numpy's float32 mean is inf once its sum overflows). The scaling is exact except for terms
 * below 2^e times the smallest normal, which lie far below the error bound of a sum that
 * reached the range (README, accuracy). The walk is serial because no sub-group step or
 * barrier may sit in a branch that only some teams take: slow for a long row, but only rows
 * whose first sum was not finite take it. Terms with a sign: MAP none or nan-to-zero, and
 * every second pass over partial sums (MAP none); abs, squares and counts cannot cancel. */
#if defined(OP_SUM) && ACC_IS_FLOAT && (MAP == MAP_NONE || MAP == MAP_NAN_TO_ZERO)
#define RESCUE_SUM 1
#else
#define RESCUE_SUM 0
#endif
/* RESCUE_PROD: a float product's lanes and blocks multiply their own terms first, so one
 * partial overflowed to inf while another underflowed to 0, and inf * 0 gave NaN where the
 * exact product was finite (1e30 and 1e-30 alternating: numpy 1.0, every device NaN; an
 * outside fuzz run, 2026-11-27), or an inf or 0 where it lay in range. A task whose product
 * comes out NaN, inf or 0 is multiplied again by its writing work-item alone, the running
 * product kept as frexp's mantissa and a 64-bit exponent: no partial passes the range, one
 * rounding a term (the README's bound), and an inf, NaN or 0 term still gives IEEE's result.
 * Rows holding a 0 take the walk too (their product is 0 in either order). */
#if defined(OP_PROD) && ACC_IS_FLOAT && MAP == MAP_NONE
#define RESCUE_PROD 1
#else
#define RESCUE_PROD 0
#endif
/* PROD_SIDES (the planner, float products split in chunks): 1 in the chunks' pass, 2 in the
 * merge pass; see store_prod_part */
#ifndef PROD_SIDES
#define PROD_SIDES 0
#endif
#if PROD_SIDES && !RESCUE_PROD
#error "PROD_SIDES needs a float product (RESCUE_PROD)"
#endif
#if PROD_SIDES == 1 && (FINALIZE != 0 || OUT_HALF)
#error "PROD_SIDES 1 writes the float partials of a split pass"
#endif
/* SUM_SIDES (the planner, float sums of signed terms split in chunks: sum, nansum, mean): 1 in
 * the chunks' pass, 2 in the merge pass. A chunk's sum can pass the range where the row's does
 * not (2000 terms of 2^118, then 2000 of -2^118: chunks of +inf and -inf gave NaN where the
 * sum is 0, on every split plan; 2026-11-27), so each chunk leaves its sum twice, n_parts
 * apart in the partials: plainly (inf where it passes the range), and times 2^-64
 * (SIDE_DOWN), where no chunk's sum nor any sum of them can pass it. */
#ifndef SUM_SIDES
#define SUM_SIDES 0
#endif
#if SUM_SIDES && !RESCUE_SUM
#error "SUM_SIDES needs a float sum of signed terms (RESCUE_SUM)"
#endif
#if SUM_SIDES == 1 && (FINALIZE != 0 || OUT_HALF)
#error "SUM_SIDES 1 writes the float partials of a split pass"
#endif
/* the partials pass (1) or the merge pass (2) of a split plan whose chunks leave two sides */
#define SIDES (PROD_SIDES ? PROD_SIDES : SUM_SIDES)
#ifndef RESCUE_BLOCK
#define RESCUE_BLOCK 32
#endif
#if RESCUE_BLOCK != 32 && RESCUE_BLOCK != 256
#error "RESCUE_BLOCK must be 32 or 256"
#endif
#if RESCUE_SUM || RESCUE_PROD
/* frexp_walk.h: the product kept as frexp's mantissa and exponent, the written-out blocks
 * (shared with row_scan.cl's PHASE 4 walk) */
#include "frexp_walk.h"
#endif
#if RESCUE_SUM
#define RESCUE_STEP(x) block += (x) * down
#define RESCUE_RENORM
#elif RESCUE_PROD
/* the running product m * 2^e (frexp_walk.h): m renormalised every 32 terms (RESCUE_RENORM) */
#define RESCUE_STEP(x) FREXP_WALK_MUL(m, e, (x))
#define RESCUE_RENORM FREXP_WALK_RENORM(m, e);
#endif
#if RESCUE_SUM || RESCUE_PROD
#if RESCUE_BLOCK == 256
/* llvmpipe (the planner's RESCUE_BLOCK 256): the block's terms written out, not looped
 * (frexp_walk.h says why). Written out everywhere, 32 of them cost the H100's short rows
 * 5-40 %. */
#define RESCUE_TERM(k) if (i + (k) < n) RESCUE_STEP(load_1(p + (i + (k)) * step));
#define RESCUE_32(k) WRITTEN_OUT_32(RESCUE_TERM, k)
#define RESCUE_BLOCK_TERMS RESCUE_32(0) RESCUE_RENORM RESCUE_32(32) RESCUE_RENORM RESCUE_32(64) RESCUE_RENORM \
                           RESCUE_32(96) RESCUE_RENORM RESCUE_32(128) RESCUE_RENORM RESCUE_32(160) RESCUE_RENORM \
                           RESCUE_32(192) RESCUE_RENORM RESCUE_32(224) RESCUE_RENORM
#else
#define RESCUE_BLOCK_TERMS \
    for (ulong j = i; j < i + RESCUE_BLOCK && j < n; ++j) RESCUE_STEP(load_1(p + j * step)); \
    RESCUE_RENORM
#endif
#endif
#if RESCUE_SUM
/* scaled_sum: the sum of the n terms at p, step elements apart, every term times `down`:
 * blocks of RESCUE_BLOCK plain adds joined by Kahan adds, as in lane_partial. A NaN ends the
 * walk; so does llvmpipe's loop limiter (plan.py, RUSTICL_LOOP_TRIPS), silently, and a walk
 * that stopped short gives NaN rather than the sum of a part of the row.
 * rescued_sum: their sum (FIN_MEAN: their mean over count) with down = 2^-(bits(n) + 1),
 * scaled back. */
COLD_INLINE outer_t scaled_sum(__global const IN_T *p, const ulong n, const ulong step, const ACC_T down) {
    outer_t total = outer_init();
    ulong i = 0;
    for (; i < n; i += RESCUE_BLOCK) {
        ACC_T block = (ACC_T)0;
        RESCUE_BLOCK_TERMS
        total = outer_add(total, block);
        if (total.s != total.s) break;
    }
    return i < n ? outer_wrap((ACC_T)NAN) : total;
}
COLD_INLINE ACC_T rescued_sum(__global const IN_T *p, const ulong n, const ulong step, const ulong count) {
    ACC_T down = (ACC_T)0.5;
    for (ulong m = n; m > 0; m >>= 1) down *= (ACC_T)0.5;
    const outer_t total = scaled_sum(p, n, step, down);
#if FINALIZE == FIN_MEAN
    return outer_mean(total, (ACC_T)count) / down;
#else
    return outer_value(total) / down;
#endif
}
/* RESULT_KEPT(r): whether a result r stands as it is (finite); else it needs the walk.
 * RESCUED, the split sides and reduce_cols (RESCUE_WANTED first, the walks apart from its
 * stores) all ask this one predicate */
#define RESULT_KEPT(r) (fabs(r) < (ACC_T)INFINITY)
#define RESCUE_WANTED(r) (!RESULT_KEPT(r))
/* r itself where it is finite, else the task summed again (rescued_sum) */
inline ACC_T finite_or_rescued(const ACC_T r, __global const IN_T *p, const ulong n, const ulong step,
                               const ulong count) {
    return RESULT_KEPT(r) ? r : rescued_sum(p, n, step, count);
}
#define SIDE_DOWN ((ACC_T)5.421010862427522e-20)  /* 2^-64: see SUM_SIDES */
#if SUM_SIDES == 1
/* a split chunk's sum r, twice (see SUM_SIDES): P[t], r where finite, else the chunk summed
 * again scaled (its true sum: +-inf only past the range); S[t] = that sum times 2^-64 */
inline void store_sum_part(__global ACC_T *parts, const ulong n_parts, const ulong t, const ACC_T r,
                           __global const IN_T *p, const ulong n, const ulong step) {
    ACC_T scaled = r * SIDE_DOWN;
    if (!RESULT_KEPT(r)) {
        scaled = outer_value(scaled_sum(p, n, step, SIDE_DOWN));
    }
    parts[t] = RESULT_KEPT(r) ? r : scaled / SIDE_DOWN;
    parts[n_parts + t] = scaled;
}
/* store_sum_part for an r that needs no walk (RESCUE_WANTED false): P = r, S = r * 2^-64 */
inline void store_sum_part_plain(__global ACC_T *parts, const ulong n_parts, const ulong t, const ACC_T r) {
    parts[t] = r;
    parts[n_parts + t] = r * SIDE_DOWN;
}
#define STORE_PART(parts, n_parts, t, r, p, n, step) \
    store_sum_part((parts), (n_parts), (t), (r), (p), (n), (step))
#define STORE_PART_PLAIN(parts, n_parts, t, r) store_sum_part_plain((parts), (n_parts), (t), (r))
#elif SUM_SIDES == 2
/* The merge of split chunks' sums (SUM_SIDES 1): where the sum (or mean) of the P came out inf
 * or NaN, one work-item adds the chunks' S (sums times 2^-64) again, divides by the count for a
 * mean and scales back: +-inf only where the row's sum (mean) passes the range, NaN where the
 * data hold a NaN or both infinities. p points at the row's first P in the partials, whose
 * n_parts P are followed by as many S. */
COLD_INLINE ACC_T merged_sum_parts(const ACC_T r, const ulong n_parts, __global const ACC_T *p, const ulong n,
                                   const ulong step, const ulong count) {
    if (RESULT_KEPT(r)) return r;
    __global const ACC_T *scaled = p + n_parts;
    outer_t total = outer_init();
    for (ulong j = 0; j < n; ++j) {
        total = outer_add(total, scaled[j * step]);
    }
    (void)count;
#if FINALIZE == FIN_MEAN
    return outer_mean(total, (ACC_T)count) / SIDE_DOWN;
#else
    return outer_value(total) / SIDE_DOWN;
#endif
}
#endif
#if SUM_SIDES == 2
/* side_parts: a name in scope at each merge pass's call */
#define RESCUED(r, p, n, step, count) merged_sum_parts((r), side_parts, (p), (n), (step), (count))
#else
#define RESCUED(r, p, n, step, count) finite_or_rescued((r), (p), (n), (step), (count))
#endif
#elif RESCUE_PROD
/* walked_prod: the product of the n terms at p, step elements apart, as mantissa and exponent
 * (see RESCUE_PROD); `first` (the task's own product) where llvmpipe's loop limiter stopped the
 * walk short: a row of 2^25 holding a 0 keeps its 0 there rather than turn NaN. Where `first`
 * is 0 the terms hold no inf or NaN (either would have made it one), so the walk ends at the
 * block of the first 0 term: a row with a 0 near its start walks that far only. */
typedef struct { ACC_T m; long e; } prod_walk_t;
COLD_INLINE prod_walk_t walked_prod(__global const IN_T *p, const ulong n, const ulong step, const ACC_T first) {
    ACC_T m = (ACC_T)1;
    long e = 0;
    ulong i = 0;
    for (; i < n; i += RESCUE_BLOCK) {
        RESCUE_BLOCK_TERMS
        if (m != m || (m == (ACC_T)0 && first == (ACC_T)0)) break;
    }
    prod_walk_t w;
    w.m = (i < n && m == m) ? first : m;
    w.e = (i < n && m == m) ? 0 : e;
    return w;
}
/* m * 2^e, the exponent clamped where every float type is inf or 0 (frexp_walk.h) */
inline ACC_T prod_walk_value(const prod_walk_t w) {
    return FREXP_WALK_VALUE(w.m, w.e);
}
inline ACC_T rescued_prod(__global const IN_T *p, const ulong n, const ulong step, const ACC_T first) {
    return prod_walk_value(walked_prod(p, n, step, first));
}
/* RESULT_KEPT(r): a product stands where it is finite and not 0 (else the walk), as for sums */
#define RESULT_KEPT(r) (fabs(r) < (ACC_T)INFINITY && (r) != (ACC_T)0)
#define RESCUE_WANTED(r) (!RESULT_KEPT(r))
/* r itself where it is finite and not 0, else the task multiplied again (rescued_prod) */
inline ACC_T nonzero_finite_or_rescued(const ACC_T r, __global const IN_T *p, const ulong n, const ulong step) {
    return RESULT_KEPT(r) ? r : rescued_prod(p, n, step, r);
}
#if PROD_SIDES == 1
/* A split chunk's product can pass the range although the row's does not ((1e200, 1e200,
 * 1e-200, 1e-200) repeated: a chunk of "1e200, 1e200" is 1e400; H100 split_k gave inf for
 * the row's 1e200), so each chunk leaves its product three ways, n_parts apart in the
 * partials buffer: P[t], the product where it is exactly a float, else NaN, which sends the
 * merge pass to the other two; M[t] and E[t] (a long, at the 8-byte boundary 2 * n_parts
 * accumulators in), the product as M * 2^E with no range limit. */
/* P = v; M and E = w, M normalised here, once a chunk, so the merge multiplies mantissas
 * without a frexp a term */
inline void store_prod_sides(__global ACC_T *parts, const ulong n_parts, const ulong t, const ACC_T v,
                             prod_walk_t w) {
    if (fabs(w.m) < (ACC_T)INFINITY && w.m != (ACC_T)0) {
        FREXP_WALK_RENORM(w.m, w.e);
    }
    parts[t] = v;
    parts[n_parts + t] = w.m;
    ((__global long *)(parts + 2 * n_parts))[t] = w.e;
}
inline void store_prod_part(__global ACC_T *parts, const ulong n_parts, const ulong t, const ACC_T r,
                            __global const IN_T *p, const ulong n, const ulong step) {
    prod_walk_t w;
    w.m = r;
    w.e = 0;
    ACC_T v = r;
    if (!RESULT_KEPT(r)) {
        w = walked_prod(p, n, step, r);
        v = prod_walk_value(w);
        int ve;
        const ACC_T vm = frexp(v, &ve);
        if (fabs(w.m) < (ACC_T)INFINITY && w.m != (ACC_T)0 && (vm != w.m || (long)ve != w.e)) v = (ACC_T)NAN;
    }
    store_prod_sides(parts, n_parts, t, v, w);
}
/* store_prod_part for an r that needs no walk (RESCUE_WANTED false): P = r, M * 2^E = r */
inline void store_prod_part_plain(__global ACC_T *parts, const ulong n_parts, const ulong t, const ACC_T r) {
    prod_walk_t w;
    w.m = r;
    w.e = 0;
    store_prod_sides(parts, n_parts, t, r, w);
}
#define STORE_PART(parts, n_parts, t, r, p, n, step) \
    store_prod_part((parts), (n_parts), (t), (r), (p), (n), (step))
#define STORE_PART_PLAIN(parts, n_parts, t, r) store_prod_part_plain((parts), (n_parts), (t), (r))
#elif PROD_SIDES == 2
/* The merge of split chunks' products (PROD_SIDES 1): where the product of the P came out
 * NaN, inf or 0, one work-item multiplies the chunks' M * 2^E again. p points at the row's
 * first P in `parts`, whose n_parts P are followed by as many M, then the E. */
COLD_INLINE ACC_T merged_prod_parts(const ACC_T r, __global const ACC_T *parts, const ulong n_parts,
                                    __global const ACC_T *p, const ulong n, const ulong step) {
    if (RESULT_KEPT(r)) return r;
    __global const ACC_T *mant = p + n_parts;
    __global const long *expo = (__global const long *)(parts + 2 * n_parts) + (p - parts);
    ACC_T m = (ACC_T)1;
    long e = 0;
    ulong j = 0;
    /* blocks of 32 terms: the block's loads first, then one multiply a term (every M is a
     * mantissa in [0.5, 1), or 0, inf, NaN: store_prod_part), m renormalised and one test.
     * Loads interleaved with the chain ran one at a time on an H200 (float16 prod 1 x 2^28,
     * 1584 chunks walked: 2920 -> ~1600 GB/s for the whole call). */
    for (; j < n; j += 32) {
        ACC_T mb[32];
        long eb[32];
        UNROLL_LOOP
        for (uint u = 0; u < 32; ++u) {
            const bool in_row = j + u < n;
            mb[u] = in_row ? mant[(j + u) * step] : (ACC_T)1;
            eb[u] = in_row ? expo[(j + u) * step] : 0;
        }
        UNROLL_LOOP
        for (uint u = 0; u < 32; ++u) {
            m *= mb[u];
            e += eb[u];
        }
        FREXP_WALK_RENORM(m, e);
        if (m != m || (m == (ACC_T)0 && r == (ACC_T)0)) break;
    }
    if (j < n && m == m) return r;  /* llvmpipe's loop limiter stopped the walk */
    prod_walk_t w;
    w.m = m;
    w.e = e;
    return prod_walk_value(w);
}
/* in, in_offset and side_parts: names in scope at each merge pass's call */
#define RESCUED(r, p, n, step, count) merged_prod_parts((r), in + in_offset, side_parts, (p), (n), (step))
#endif
#if PROD_SIDES != 2
#define RESCUED(r, p, n, step, count) nonzero_finite_or_rescued((r), (p), (n), (step))
#endif
#else
#define RESCUED(r, p, n, step, count) (r)
#define RESCUE_WANTED(r) 0
#endif

/* ---- sub-group steps: one helper per SG_MODE behind sg_reduce (and butterfly) ------- */
#if SG_MODE == SG_SHUFFLE_KHR || SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX
/* Butterfly over aligned groups of `width` lanes: xor masks below `width` never leave the
 * group, so several rows can share one sub-group. Every lane ends with its group's value. */
inline outer_t butterfly(outer_t v, const uint width) {
    UNROLL_LOOP
    for (uint m = width >> 1; m > 0; m >>= 1) {
        outer_t w;
        w.s = shuffle_xor(v.s, m);
#if ACC_COMPENSATED
        w.c = shuffle_xor(v.c, m);
#endif
        v = outer_merge(v, w);
    }
    return v;
}
inline outer_t sg_reduce(outer_t v) { return butterfly(v, SG_SIZE); }
#elif SG_MODE == SG_BUILTIN && ACC_COMPENSATED
/* The built-in add sums in the driver's order. Its inputs are made error-free first
 * (Rump, Ogita, Oishi, "Accurate floating-point summation", ExtractScalar): with sigma a
 * power of two >= 2 * SG_SIZE * max|s|, hi = (sigma + s) - sigma is s on the grid of
 * eps * sigma and lo = s - hi is exact; a sum of SG_SIZE such hi stays below sigma on that
 * grid, so it is exact in any order, and the lo (each below eps * sigma) are tiny. Outside
 * [1e-30, 1e30] (where sigma could under- or overflow) and for inf/NaN the plain sum runs. */
#if (SG_SIZE & (SG_SIZE - 1)) != 0
#error "the compensated built-in reduce needs a power-of-two SG_SIZE"
#endif
#if ACC_BYTES == 8
#define ACC_INV_EPS 9007199254740992.0   /* 2**53 */
#else
#define ACC_INV_EPS 16777216.0f          /* 2**24 */
#endif
/* 2**ceil(log2 m) for normal m > 0, branch-free (Rump et al., NextPowerTwo) */
inline ACC_T pow2_at_least(const ACC_T m) {
    const ACC_T q = m * (ACC_T)ACC_INV_EPS;
    const ACC_T l = fabs((q + m) - q);
    return l == (ACC_T)0 ? m : l;
}
inline outer_t sg_reduce(outer_t v) {
    const ACC_T m = sub_group_reduce_max(fabs(v.s));
    if (m >= (ACC_T)1e-30 && m <= (ACC_T)1e30) {   /* uniform: m is the sub-group's */
        const ACC_T sigma = pow2_at_least(m) * (ACC_T)(2 * SG_SIZE);
        const ACC_T hi = (sigma + v.s) - sigma;
        const ACC_T lo = (v.s - hi) + v.c;
        outer_t r;
        r.s = sub_group_reduce_add(hi);
        r.c = sub_group_reduce_add(lo);
        return r;
    }
    v.s = sub_group_reduce_add(v.s);
    v.c = (ACC_T)0;
    return v;
}
#elif SG_MODE == SG_BUILTIN && defined(OP_SUM)
inline outer_t sg_reduce(outer_t v) { v.s = sub_group_reduce_add(v.s); return v; }
#elif SG_MODE == SG_BUILTIN && !ACC_IS_FLOAT
inline outer_t sg_reduce(outer_t v) { v.s = BUILTIN_MAXMIN(v.s); return v; }
#elif SG_MODE == SG_BUILTIN
/* The built-in max/min leave NaN handling unspecified; numpy propagates it. */
inline outer_t sg_reduce(outer_t v) {
    const ACC_T r = BUILTIN_MAXMIN(v.s);
    v.s = sub_group_any(isnan(v.s)) ? (ACC_T)NAN : r;
    return v;
}
#endif

/* ---- the kernel --------------------------------------------------------------------- */
/* One lane's share of elements [0, len) at p: the scalar head up to VLOAD_ALIGNED (none on
 * OpenCL), lane-strided VEC-element loads with UNROLL of them in flight, the scalar tail
 * (len % VEC elements), all into VEC plain accumulators. For float sums with ACC_BLOCK > 0,
 * every ACC_BLOCK loads the block's total joins the lane's compensated total (see
 * "accumulation"); the planner gives ACC_BLOCK 0 where no lane has more than one block, so
 * short rows run the plain code. Measured on the bench shapes: a load counter with a branch
 * in the loop cost Intel's CPU runtime 10-15 % (it vectorises across work-items); these
 * nested loops 0-3 % there and 3-9 % on PoCL's long rows. */
inline outer_t lane_partial(__global const IN_T *p, ulong len, const uint lane) {
    ACC_T acc = IDENTITY;   /* the scalar head and tail (main's order of adds) */
    ACC_T accv[VEC];
    UNROLL_LOOP
    for (int j = 0; j < VEC; ++j) {
        accv[j] = IDENTITY;
    }
    const ulong head = min((ulong)VLOAD_HEAD(p, VEC), len);
    NO_UNROLL
    for (ulong i = lane; i < head; i += LANES) {
        acc = COMBINE(acc, load_1(p + i));
    }
    p += head;
    len -= head;
    const ulong full = len - len % VEC;
    const ulong step = (ulong)LANES * VEC;
    ulong i = (ulong)lane * VEC;
#if ACC_BLOCKED
    outer_t total = outer_init();
    const ulong span = (ulong)ACC_BLOCK * step;
#else
    const ulong span = 0;   /* unused: one block */
#endif
    NO_UNROLL
    for (;;) {
        const ulong stop = BLOCK_STOP(i, full, span);
        NO_UNROLL
        for (; i + (UNROLL - 1) * step < stop; i += UNROLL * step) {
            UNROLL_LOOP
            for (int u = 0; u < UNROLL; ++u) {
                fold_vec(accv, p + i + u * step);
            }
        }
#if UNROLL > 1
        NO_UNROLL
        for (; i < stop; i += step) {
            fold_vec(accv, p + i);
        }
#endif
        if (BLOCK_DONE(i, full)) break;
#if ACC_BLOCKED
        total = outer_add(total, hreduce(accv));
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) {
            accv[j] = IDENTITY;
        }
#endif
    }
#if ACC_BLOCKED
    total = outer_add(total, hreduce(accv));
#else
    acc = COMBINE(acc, hreduce(accv));
#endif
    NO_UNROLL
    for (i = full + lane; i < len; i += LANES) {
        acc = COMBINE(acc, load_1(p + i));
    }
#if ACC_BLOCKED
    return outer_add(total, acc);
#else
    return outer_wrap(acc);
#endif
}

/* reduce_rows: out[out_offset + t] = the reduction of task t (row t / SPLIT, chunk t % SPLIT).
 * Launch: 1-D, local size WG_SIZE exactly, global size any multiple of it (grid stride over
 * n_rows * SPLIT tasks, TEAMS per group per trip); offsets, sizes and strides in elements;
 * chunk_len = row_len when SPLIT == 1; mean_count divides for FINALIZE 1 (mean_inv, its
 * reciprocal, for mean_div). Output is OUT_T
 * (ACC_T partials laid out (n_rows, SPLIT) when SPLIT > 1). */
__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows(__global const IN_T *restrict in, const ulong in_offset,
                 __global OUT_T *restrict out, const ulong out_offset,
                 const ulong n_rows, const ulong row_len, const ulong row_stride,
                 const ulong chunk_len, const ulong mean_count, const ACC_T mean_inv)
{
#if LANES > 1 && (SG_MODE == SG_LOCAL || LANES > SG_SIZE)
    __local outer_t scratch[SCRATCH_LEN];
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
#if SIDES == 2
    const ulong side_parts = n_rows * row_len;  /* the chunks' pass wrote this many P */
#endif

    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_tasks; base += task_stride) {
        const ulong task = base + team;
        outer_t acc = outer_init();
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
                scratch[lid] = outer_merge(scratch[lid], scratch[lid + s]);
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
            outer_t part = outer_init();
            for (uint j = lane; j < LANES / SG_SIZE; j += SG_SIZE) {
                part = outer_merge(part, scratch[team * (LANES / SG_SIZE) + j]);
            }
            acc = sg_reduce(part);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

        if (lane == 0 && task < n_tasks) {
#if ACC_COMPENSATED && !ACC_BLOCKED && LANES == 1
            /* one block, no team: the correction is 0 (PoCL: the divide of c cost 4 % on K = 32) */
            ACC_T r = acc.s;
#if FINALIZE == FIN_MEAN
            /* the plain divide: mean_div measured slower on one-lane rows (H200: float32 rows of
             * 2-8 10-15 %, float64 of 4 4 %, float16 of 16-32 3-10 %) */
            r = r / (ACC_T)mean_count;
#endif
#elif FINALIZE == FIN_MEAN && ACC_COMPENSATED
            ACC_T r = mean_div(acc.s, acc.c, (ACC_T)mean_count, mean_inv);
#elif FINALIZE == FIN_MEAN
            ACC_T r = mean_div(acc.s, (ACC_T)0, (ACC_T)mean_count, mean_inv);
#else
            ACC_T r = outer_value(acc);
#endif
#if SIDES == 1
            {
                const ulong start = (task % SPLIT) * chunk_len;
                const ulong stop = min(start + chunk_len, row_len);
                STORE_PART(out + out_offset, n_tasks, task, r,
                                in + in_offset + (task / SPLIT) * row_stride + start, stop - start, 1);
            }
#else
#if RESCUE_SUM || RESCUE_PROD
            {
                const ulong start = (task % SPLIT) * chunk_len;
                const ulong stop = min(start + chunk_len, row_len);
                r = RESCUED(r, in + in_offset + (task / SPLIT) * row_stride + start, stop - start, 1, mean_count);
            }
#endif
#if FINALIZE == FIN_SQRT
            r = sqrt(r);
#endif
#if OUT_HALF
            vstore_half(r, 0, out + out_offset + task);
#else
            out[out_offset + task] = (OUT_T)r;
#endif
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
#define FINISH(o) outer_mean((o), (ACC_T)count)
#elif FINALIZE == FIN_SQRT
#define FINISH(o) sqrt(outer_value(o))
#else
#define FINISH(o) outer_value(o)
#endif

inline void store_1(__global OUT_T *p, ACC_T v) {
#if OUT_HALF
    vstore_half(v, 0, p);
#else
    *p = (OUT_T)v;
#endif
}
/* a stored result read back (reduce_cols' rescue walk): a value RESCUED rescues is inf, NaN
 * or 0 in OUT_T too; a finite one made inf or 0 by a narrower OUT_T is walked to the same
 * value and stored alike */
inline ACC_T stored_1(__global const OUT_T *p) {
#if OUT_HALF
    return (ACC_T)vload_half(0, p);
#else
    return (ACC_T)*p;
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
#if SIDES
    /* P in the partials: (outer, SPLIT, inner) in the chunks' pass, (outer, k_len, inner) read */
    const ulong side_parts = outer * (SIDES == 1 ? SPLIT : k_len) * inner;
#endif
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
        ACC_T acc[NBLK][VEC];        /* inner (block) accumulators */
        ACC_T tail[VEC];
        for (uint b = 0; b < NBLK; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) acc[b][j] = IDENTITY;
        }
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) tail[j] = IDENTITY;
#if COL_BLOCKED
        /* outer accumulators, one per column (see "accumulation"); the planner gives COL_BLOCK
         * 0 where every work-item's K range is one block, which then runs the plain code */
        outer_t total[NBLK][VEC];
        outer_t total_tail[VEC];
        for (uint b = 0; b < NBLK; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) total[b][j] = outer_init();
        }
        UNROLL_LOOP
        for (int j = 0; j < VEC; ++j) total_tail[j] = outer_init();
        const ulong span = COL_BLOCK;
#define COL_RESULT(b, j) outer_add(total[b][j], acc[b][j])
#define TAIL_RESULT(j) outer_add(total_tail[j], tail[j])
#else
        const ulong span = 0;   /* one block */
#define COL_RESULT(b, j) outer_wrap(acc[b][j])
#define TAIL_RESULT(j) outer_wrap(tail[j])
#endif
        ulong k = k0;
        NO_UNROLL
        for (;;) {
            const ulong stop = BLOCK_STOP(k, k1, span);
            NO_UNROLL
            for (; k + (UNROLL - 1) < stop; k += UNROLL) {
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
            for (; k < stop; ++k) {
                for (uint b = 0; b < full; ++b) fold_block(acc[b], p + k * k_stride + b * VEC, aligned);
                for (uint j = 0; j < rem; ++j) tail[j] = COMBINE(tail[j], load_1(p + k * k_stride + full * VEC + j));
            }
#endif
            if (BLOCK_DONE_IF(COL_BLOCKED, k, k1)) break;
#if COL_BLOCKED
            /* the block's accumulators join the outer ones, column by column */
            for (uint b = 0; b < full; ++b) {
                UNROLL_LOOP
                for (int j = 0; j < VEC; ++j) { total[b][j] = outer_add(total[b][j], acc[b][j]); acc[b][j] = IDENTITY; }
            }
            for (uint j = 0; j < rem; ++j) { total_tail[j] = outer_add(total_tail[j], tail[j]); tail[j] = IDENTITY; }
#endif
        }
        /* p + k0 * k_stride + column: where a column's sum that came out inf or NaN is read again */
        /* Stores first, then (rarely) the walks that rescue a column, over the stored tile:
         * walks inside the unrolled store loops had cost Intel's CPU runtime 12x on columns
         * (65536 x 1024 float32 sum, axis 0, split in chunks: 18.8 -> 230-280 ms; 2026-11-27
         * to -29, found by the CPU table's axis=0 line) */
        int rescue = 0;
#if SIDES == 1
        __global OUT_T *parts = out + out_offset;
        const ulong t0 = (ulong)(dst - parts);
        for (uint b = 0; b < full; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) {
                const ACC_T r = FINISH(COL_RESULT(b, j));
                rescue |= RESCUE_WANTED(r);
                STORE_PART_PLAIN(parts, side_parts, t0 + b * VEC + j, r);
            }
        }
        for (uint j = 0; j < rem; ++j) {
            const ACC_T r = FINISH(TAIL_RESULT(j));
            rescue |= RESCUE_WANTED(r);
            STORE_PART_PLAIN(parts, side_parts, t0 + full * VEC + j, r);
        }
        if (rescue) {
            NO_UNROLL
            for (uint c = 0; c < (uint)width; ++c) {
                const ACC_T r = parts[t0 + c];  /* P as stored plain: the chunk's r */
                if (RESCUE_WANTED(r)) {
                    STORE_PART(parts, side_parts, t0 + c, r, p + k0 * k_stride + c, k1 - k0, k_stride);
                }
            }
        }
#else
        for (uint b = 0; b < full; ++b) {
            UNROLL_LOOP
            for (int j = 0; j < VEC; ++j) {
                const ACC_T r = FINISH(COL_RESULT(b, j));
                rescue |= RESCUE_WANTED(r);
                store_1(dst + b * VEC + j, r);
            }
        }
        for (uint j = 0; j < rem; ++j) {
            const ACC_T r = FINISH(TAIL_RESULT(j));
            rescue |= RESCUE_WANTED(r);
            store_1(dst + full * VEC + j, r);
        }
#if RESCUE_SUM || RESCUE_PROD
        if (rescue) {
            NO_UNROLL
            for (uint c = 0; c < (uint)width; ++c) {
                store_1(dst + c, RESCUED(stored_1(dst + c), p + k0 * k_stride + c, k1 - k0, k_stride, count));
            }
        }
#endif
#endif
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

/* vector loads and isnan spelled with operators (PoCL 3.0 calls its built-ins out of line:
 * cpu_vec.h); max/min/fmax/fmin below are selects for the same reason */
/* float16 by F16C where the compiler has it (cpu_vec.h CPU_HALF_F16C) for maps and combines
 * that never compare a loaded value with itself or a constant: LLVM narrows such compares of a
 * widened half back to scalar half compares (row_scale.cl's |x|) */
#if IN_HALF && (MAP == MAP_NONE || MAP == MAP_SQUARE) && !defined(OP_NANMAX) && !defined(OP_NANMIN)
#define CPU_HALF_F16C 1
#endif
#include "cpu_vec.h"

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

#if ACC_BLOCKED
/* Float sums (see "accumulation"): every ACC_BLOCK steps of the unrolled loop the UNROLL
 * accumulators are added and join a vector Kahan pair (s, c), lane by lane; at the end the
 * lanes merge with TwoSum by halves. Once a lane is inf or NaN (t - t is not 0) its
 * correction is dropped, as in outer_add. With ACC_BLOCK 0 (the planner: every task is one
 * block) the plain code runs: its error is one block's (a compensated fold of short rows
 * cost Intel's runtime 20-40 % on 32-element rows). */
typedef struct { CPU_ACCV s; CPU_ACCV c; } cpu_outer_t;
inline cpu_outer_t cpu_outer_add(cpu_outer_t o, const CPU_ACCV v) {
    const CPU_ACCV y = v + o.c;
    const CPU_ACCV t = o.s + y;
    const CPU_ACCV e = y - (t - o.s);
    o.c = (t - t) == (CPU_ACCV)(0) ? e : (CPU_ACCV)(0);
    o.s = t;
    return o;
}
/* TwoSum of the halves of (s, c) of width 2w into (ns, nc) of width w */
#define CPU_TWOSUM_HALVE(w, s_, c_, ns, nc) \
    const CAT(ACC_T, w) ns = (s_).lo + (s_).hi; \
    const CAT(ACC_T, w) ns##_b = ns - (s_).lo; \
    const CAT(ACC_T, w) ns##_e = ((s_).lo - (ns - ns##_b)) + ((s_).hi - ns##_b); \
    const CAT(ACC_T, w) nc = ((ns - ns) == (CAT(ACC_T, w))(0)) ? (c_).lo + (c_).hi + ns##_e : (CAT(ACC_T, w))(0);
inline outer_t cpu_outer_value(const cpu_outer_t o) {
#if VEC == 1
    outer_t r; r.s = o.s; r.c = o.c;
#else
#if VEC == 16
    CPU_TWOSUM_HALVE(8, o.s, o.c, s8, c8)
#elif VEC == 8
    const CAT(ACC_T, 8) s8 = o.s, c8 = o.c;
#endif
#if VEC >= 8
    CPU_TWOSUM_HALVE(4, s8, c8, s4, c4)
#elif VEC == 4
    const CAT(ACC_T, 4) s4 = o.s, c4 = o.c;
#endif
#if VEC >= 4
    CPU_TWOSUM_HALVE(2, s4, c4, s2, c2)
#else
    const CAT(ACC_T, 2) s2 = o.s, c2 = o.c;
#endif
    outer_t r; r.s = s2.x; r.c = c2.x;
    outer_t b; b.s = s2.y; b.c = c2.y;
    r = outer_merge(r, b);
#endif
    return r;
}
#define CPU_RESULT_T outer_t
#else
#define CPU_RESULT_T ACC_T
#endif

/* The reduction of len elements at p: UNROLL (1, 2, 4 or 8) vector accumulators, then one,
 * then a scalar tail; nothing is read past p + len. Float sums: compensated outer_t (above),
 * a block being ACC_BLOCK loads into each accumulator. Eight accumulators (the planner's
 * choice for float sums) halve each one's chain of plain adds at the same join rate as four
 * with blocks twice as long: the error of a block's plain adds grows with its chain, and four
 * chains of 32 left N(0, 1) rows of 1000-4000 at 1.1-1.2x numpy's median error. */
#if UNROLL != 1 && UNROLL != 2 && UNROLL != 4 && UNROLL != 8
#error "reduce_rows_cpu: UNROLL must be 1, 2, 4 or 8"
#endif
#if UNROLL > 4
#define CPU_ACCS 8
#elif UNROLL > 2
#define CPU_ACCS 4
#else
#define CPU_ACCS UNROLL
#endif
inline CPU_RESULT_T cpu_block(__global const IN_T *p, const ulong len) {
    CPU_ACCV a0 = (CPU_ACCV)(IDENTITY);
#if UNROLL > 1
    CPU_ACCV a1 = (CPU_ACCV)(IDENTITY);
#endif
#if UNROLL > 2
    CPU_ACCV a2 = (CPU_ACCV)(IDENTITY);
    CPU_ACCV a3 = (CPU_ACCV)(IDENTITY);
#endif
#if UNROLL > 4
    CPU_ACCV a4 = (CPU_ACCV)(IDENTITY), a5 = (CPU_ACCV)(IDENTITY);
    CPU_ACCV a6 = (CPU_ACCV)(IDENTITY), a7 = (CPU_ACCV)(IDENTITY);
#endif
    ulong i = 0;
#if ACC_BLOCKED
    cpu_outer_t total; total.s = (CPU_ACCV)(0); total.c = (CPU_ACCV)(0);
    const ulong span = (ulong)ACC_BLOCK * CPU_ACCS * VEC;
#else
    const ulong span = 0;   /* one block */
#endif
    /* vector k of the step at i into accumulator acc */
#define CPU_STEP(acc, k) CPU_ACCUM(acc, CPU_TO_ACC(CPU_MAP(CPU_LOAD(p + i + (k) * VEC))))
    for (;;) {
        const ulong stop = BLOCK_STOP(i, len, span);
        for (; i + CPU_ACCS * VEC <= stop; i += CPU_ACCS * VEC) {
            CPU_STEP(a0, 0);
#if UNROLL > 1
            CPU_STEP(a1, 1);
#endif
#if UNROLL > 2
            CPU_STEP(a2, 2); CPU_STEP(a3, 3);
#endif
#if UNROLL > 4
            CPU_STEP(a4, 4); CPU_STEP(a5, 5); CPU_STEP(a6, 6); CPU_STEP(a7, 7);
#endif
        }
        if (BLOCK_DONE(stop, len)) break;
#if ACC_BLOCKED
        /* a full block: its accumulators join the compensated total */
#if UNROLL > 4
        total = cpu_outer_add(total, ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)));
        a4 = (CPU_ACCV)(0);
        a5 = (CPU_ACCV)(0);
        a6 = (CPU_ACCV)(0);
        a7 = (CPU_ACCV)(0);
        a2 = (CPU_ACCV)(0);
        a3 = (CPU_ACCV)(0);
#elif UNROLL > 2
        total = cpu_outer_add(total, (a0 + a2) + (a1 + a3));
        a2 = (CPU_ACCV)(0);
        a3 = (CPU_ACCV)(0);
#elif UNROLL > 1
        total = cpu_outer_add(total, a0 + a1);
#else
        total = cpu_outer_add(total, a0);
#endif
        a0 = (CPU_ACCV)(0);
#if UNROLL > 1
        a1 = (CPU_ACCV)(0);
#endif
#endif
    }
    /* the last vectors (fewer than CPU_ACCS) in an accumulator of their own, added after the
     * others are folded in a tree: added one by one to the folded total, each rounded at the
     * whole row's magnitude (rows of 1000 on 8 accumulators: 1.33x numpy's median error) */
    CPU_ACCV at = (CPU_ACCV)(IDENTITY);
    for (; i + VEC <= len; i += VEC) {
        CPU_STEP(at, 0);
    }
#undef CPU_STEP
#if UNROLL > 4
    CPU_ACCUM(a0, a4);
    CPU_ACCUM(a1, a5);
    CPU_ACCUM(a2, a6);
    CPU_ACCUM(a3, a7);
#endif
#if UNROLL > 2
    CPU_ACCUM(a0, a2);
    CPU_ACCUM(a1, a3);
#endif
#if UNROLL > 1
    CPU_ACCUM(a0, a1);
#endif
    CPU_ACCUM(a0, at);
#if ACC_BLOCKED
    ACC_T tail = (ACC_T)0;
    for (; i < len; ++i) {
        tail = cpu_combine1(tail, load_1(p + i));
    }
    total = cpu_outer_add(total, a0);
    return outer_add(cpu_outer_value(total), tail);
#else
    /* the scalar tail apart too, for the same reason as `at` */
    ACC_T tail = (ACC_T)(IDENTITY);
    for (; i < len; ++i) {
        tail = cpu_combine1(tail, load_1(p + i));
    }
    return cpu_combine1(cpu_hreduce(a0), tail);
#endif
}

/* reduce_rows_cpu: the reduce_rows contract (same arguments, tasks, output layout), except
 * that work-item w of the get_global_size(0) in the grid owns tasks
 * [w * per, min((w + 1) * per, n_tasks)), per = ceil(n_tasks / global size): contiguous
 * memory per work-item, any local size. */
__kernel KERNEL_WG_SIZE(WG_SIZE)
void reduce_rows_cpu(__global const IN_T *restrict in, const ulong in_offset,
                     __global OUT_T *restrict out, const ulong out_offset,
                     const ulong n_rows, const ulong row_len, const ulong row_stride,
                     const ulong chunk_len, const ulong mean_count, const ACC_T mean_inv)
{
    const ulong n_tasks = n_rows * SPLIT;
    const ulong items = (ulong)get_global_size(0);
#if SIDES == 2
    const ulong side_parts = n_rows * row_len;
#endif
    const ulong per = (n_tasks + items - 1) / items;
    const ulong t0 = CPU_MIN_U64((ulong)get_global_id(0) * per, n_tasks);
    const ulong t1 = CPU_MIN_U64(t0 + per, n_tasks);
    for (ulong task = t0; task < t1; ++task) {
        const ulong row = task / SPLIT;
        const ulong start = (task % SPLIT) * chunk_len;
        const ulong stop = CPU_MIN_U64(start + chunk_len, row_len);
        const CPU_RESULT_T res = cpu_block(in + in_offset + row * row_stride + start, stop - start);
#if ACC_BLOCKED && FINALIZE == FIN_MEAN
        ACC_T acc = outer_mean(res, (ACC_T)mean_count);
#elif ACC_BLOCKED
        ACC_T acc = outer_value(res);
#elif FINALIZE == FIN_MEAN
        ACC_T acc = res / (ACC_T)mean_count;
#else
        ACC_T acc = res;
#endif
#if SIDES == 1
        STORE_PART(out + out_offset, n_tasks, task, acc, in + in_offset + row * row_stride + start, stop - start, 1);
#else
#if RESCUE_SUM || RESCUE_PROD
        acc = RESCUED(acc, in + in_offset + row * row_stride + start, stop - start, 1, mean_count);
#endif
#if FINALIZE == FIN_SQRT
        acc = sqrt(acc);
#endif
        store_1(out + out_offset + task, acc);
#endif
    }
}
#endif /* CPU_BLOCKS */
