/* row_norm.cl: rms_norm / layer_norm of each contiguous row, or its mean and variance.
 *
 * Teams, lanes and the row cache (CACHE 0 registers / 1 local memory / 2 none) work as in
 * softmax.cl. The statistics of a row read from memory (or local memory) come from one pass
 * over it: sums of d = x - x0 and d*d, where x0 is the row's first element (a shift that keeps
 * float32 accurate for rows with a large mean) and each lane's sums are Neumaier-compensated
 * (RESCUE below where the shift misleads them); a row in registers (CACHE 0) takes two passes
 * over them, sum(d) then sum((d - mean)^2). Then one write:
 *   NORM 0  rms_norm    y = x * rsqrt(mean(x*x) + eps) * w                  (no shift)
 *   NORM 1  layer_norm  y = ((x - x0) - mean_d) * rsqrt(var + eps) * w + b   (var: ddof 0)
 *   NORM 2  moments     stats[row] = mean, stats[n_rows + row] = var; no row written
 * w and b are arrays of row_len elements (HAS_WEIGHT / HAS_BIAS; else 1 and 0): ACC_T, or
 * float16 read as they are when PARAM_HALF is 1 (a float16 model's own weights: converting
 * them per call cost a kernel launch and an allocation per call on CUDA).
 *
 * Split rows (SPLIT > 1): PHASE 1 writes each chunk's statistics: rms_norm its sum of x*x;
 * layer_norm and moments its shift c (its first element, or RESCUE's estimate of its mean),
 * its sum of x - c and its M2 = sum((x - chunk mean)^2). PHASE 2 merges them by Chan's formula
 * around r, the mean of the chunks' means (or, within ~100 ulp of it, the first chunk's
 * shift: exact for all-equal rows), and writes the chunk around r (moments: the first
 * chunk's team writes the statistics). The chunks' sums had been taken around the row's first
 * element and added up: an outlier there (1e6 first, then N(0, 1), a million elements) put the
 * mean 6e-2 off, the rounding of (c - x0) * chunk length.
 *
 * RESCUE (layer_norm and moments of rows read from memory or local memory): the variance
 * sum(d*d)/n - mean(d)^2 holds only where the shift lies near the mean. A first element far
 * from it (an outlier) cancels bits: relative error ~eps * mean(d)^2 / var, up to eps * n, 23 %
 * for a float32 row of 4e6 with 0 first and the rest 1e4 +- 1; further out (|x0 - mean| past
 * ~1.8e19 / sqrt(n) in float32) the squares overflow though sum((x - mean)^2) need not, as
 * numpy's two passes show. A task whose mean(d)^2 passes RESCUE_CANCEL times its variance, or
 * whose sum of d*d came out inf while its sum of d is finite (every d finite: the row holds no
 * inf or NaN), adds its deviations again around x0 + mean(d), where neither can happen: one
 * more read, for those tasks only (for a normal row, |x0 - mean| > 4 sigma: 6e-5 of them).
 * Split rows shift each chunk by its own first element for the same reason.
 *
 * WILD (layer_norm and moments, every cache and phase): a task whose sum of d came out inf or
 * NaN. Either the row holds an inf or NaN, or deviations from the shift overflowed (values of
 * both signs near the type's maximum). With every element finite, |sum(d)| past ACC_MAX puts
 * the mean more than ACC_MAX / n from x0, itself an element, so the variance passes
 * ACC_MAX^2 / n^3: past ACC_MAX for any n below 7e12 (float32). So the variance is NaN (an inf
 * or NaN in the row) or +inf, as numpy's float32 two passes give (an inf element: inf - inf;
 * else the deviations' squares overflow), and the sum of x * WILD_SCALE tells which: it
 * neither overflows for finite x nor hides an inf or NaN. It also gives moments numpy's mean
 * (inf where the row holds +inf; a row past the range: its mean, where numpy's float32 sum
 * overflows). layer_norm writes 0 * w + b (x / inf) or NaN. It had given NaN for both
 * statistics, wherever the inf sat. A read of x * WILD_SCALE for those tasks only: rows read
 * from memory take it in RESCUE's walk; layer_norm's rows in registers scale their second
 * pass, moments' lane 0 reads its register row again; split rows mark a chunk's M2 inf or NaN
 * and the row's first task reads the row again for moments' mean.
 *
 * Entry:
 *   norm_rows(in, in_offset, out, out_offset, weight, bias, stats, partials,
 *             n_rows, row_len, chunk_len, eps)
 * Launch as softmax.cl's softmax_rows. stats is (2, n_rows) of ACC_T (moments only);
 * weight and bias may be any buffer when HAS_WEIGHT / HAS_BIAS is 0.
 *
 * Required macros: those of row_common.h, and NORM, HAS_WEIGHT, HAS_BIAS, PARAM_HALF;
 * optional PARAM_RUNS (default 0; see below).
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
#ifndef PARAM_HALF
#error "PARAM_HALF (0/1: weight and bias are float16, else ACC_T) is required"
#endif
#define NORM_RMS 0
#define NORM_LAYER 1
#define NORM_MOMENTS 2
#if NORM == NORM_MOMENTS && CACHE == 1
#error "moments writes no row: CACHE 0 (two passes over registers) or 2"
#endif

/* FLAT_WRITE (the planner's choice for split rows on CUDA, default 0; rms_norm and layer_norm,
 * rows a multiple of VEC long): PHASE 2 only folds the partials, and the first task of each
 * row stores its write's constants (xs, shift, mean_d, inv of RESULT_WB) after the partials;
 * PHASE 3 writes the rows, one run of VEC elements a work-item and a group a tile of
 * WG_SIZE runs of one row, flat as a pointwise kernel. The chunk walk's write of PHASE 2 ran
 * 5-10 % behind such a kernel on an H100 (plan_rowops.FLAT_WRITE_OPS). */
#if FLAT_WRITE && (NORM == NORM_MOMENTS || SPLIT == 1)
#error "FLAT_WRITE: split rms_norm and layer_norm rows only"
#endif
#define FOLD_ONLY (PHASE == 2 && (NORM == NORM_MOMENTS || FLAT_WRITE))
/* what a task's trip declares (row_common.h, TASK_START): moments writes no row, and its
 * PHASE 2 only folds partials (as FLAT_WRITE's) */
#define ROW_WRITES (PHASE != 1 && NORM != NORM_MOMENTS && !FOLD_ONLY)
#define PARTIAL_SLOTS 4  /* a chunk's sum, M2, shift and SCALED flag (rms_norm: its sum of squares, scaled in the third) */
#define FLAT_WRITE_SLOTS 4  /* a row's xs, shift, mean_d and inv, after the n_rows * SPLIT partials */
#define ROW_WALKS (CACHE != 0 && !FOLD_ONLY)
/* rms_norm's fold reads only the partials (layer_norm's and moments' may read the row again) */
#define ROW_READS (!(FOLD_ONLY && NORM == NORM_RMS))
/* 16-byte stores on CUDA for rms_norm (float16 65536 x 4096: 2492 -> 2503-2522 GB/s on an
 * H100); layer_norm float16 lost 6 % with them (648720 x 128: 2420 -> 2285, same register
 * count; cause not found) and keeps VSTORE_ARRAY unless the planner asks for them
 * (plan_rowops.CUDA_WIDE_STORE_LAYER_NORM_RUNS: short float16 rows on an H200) */
#ifndef ROW_WIDE_STORES
#define ROW_WIDE_STORES (NORM == NORM_RMS)
#endif
/* CPU_OWN_MATH (PoCL): ahead of row_common.h, whose helpers take it too */
#include "cpu_own_math.h"
#include "row_common.h"

/* TEAM_FIRST_X0: layer_norm and moments rows in registers, whole (PHASE 0): lane 0's first
 * run starts at the row's first element, so x0 comes from there instead of one more load in every lane
 * (float16 var teams paid 8 % for the same load: reduce_state.cl LANE_PILOTS). 1: teams
 * inside one sub-group, where one shuffle can take a value from a lane chosen per lane
 * (HAS_LANE_SHUFFLE: CUDA); 2: teams of several sub-groups (a work-group a row), through
 * local memory and one barrier (on CUDA too, where it was measured; OpenCL keeps the load). */
#if NORM == NORM_RMS || CACHE != CACHE_REG || PHASE != 0 || !HAS_LANE_SHUFFLE || LANES == 1
#define TEAM_FIRST_X0 0
#elif LANES > SG_SIZE
#define TEAM_FIRST_X0 2
#elif SG_MODE != SG_LOCAL
#define TEAM_FIRST_X0 1
#else
#define TEAM_FIRST_X0 0
#endif

#if PARAM_HALF
#define PARAM_T half
#define PARAM(p, i) ((ACC_T)vload_half((i), (p)))
#else
#define PARAM_T ACC_T
#define PARAM(p, i) ((p)[i])
#endif
/* PARAM_RUNS 1 (planner: CUDA): the write reads weight and bias a run of VEC at a time beside
 * the row's run (one 16-byte load where aligned), not one element at a time. Element loads
 * of a float16 weight are eight 2-byte loads a run, 16 bytes apart across a warp. */
#ifndef PARAM_RUNS
#define PARAM_RUNS 0
#endif
#if PARAM_RUNS && !(VEC > 1 && CACHE != CACHE_LOCAL && NORM != NORM_MOMENTS && (HAS_WEIGHT || HAS_BIAS))
#error "PARAM_RUNS needs VEC > 1, CACHE 0 or 2, a norm that writes, and a weight or bias"
#endif
#if PARAM_RUNS && defined(ALIGNED_VLOAD) && ALIGNED_VLOAD
#error "PARAM_RUNS: NVIDIA OpenCL's aligned vector loads read IN_T vectors, not PARAM_T"
#endif

#if HAS_WEIGHT
#define W(i) PARAM(weight, i)
#else
#define W(i) ((ACC_T)1)
#endif
#if HAS_BIAS
#define B(i) PARAM(bias, i)
#else
#define B(i) ((ACC_T)0)
#endif

#if PARAM_RUNS
/* KEEP: every row re-reads the weight and bias while the rows stream through L2 (CUDA: an
 * evict_last policy keeps them there) */
#if PARAM_HALF
#define VLOAD_PARAM(n, p, d) VLOAD_KEEP_HALF_ARRAY(n, p, d)
#else
#define VLOAD_PARAM(n, p, d) VLOAD_KEEP_ARRAY(n, p, d)
#endif
/* weight and bias are aligned for VEC-wide loads at element i (uniform over a task) */
inline int params_aligned(__global const PARAM_T *weight, __global const PARAM_T *bias, const ulong i) {
    return (!HAS_WEIGHT || VLOAD_ALIGNED(weight + i, VEC)) && (!HAS_BIAS || VLOAD_ALIGNED(bias + i, VEC));
}
/* d[0 .. VEC) = p[i .. i + VEC), one VEC-wide load where `ok` */
inline void param_run(__global const PARAM_T *p, const ulong i, const int ok, ACC_T *d) {
    RUN_ACCESS(ok, VLOAD_PARAM(VEC, p + i, d), d[e_] = PARAM(p, i + e_));
}
inline void fill_run(ACC_T *d, const ACC_T v) {
    UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
        d[e] = v;
    }
}
/* the weight and bias of elements i .. i + VEC - 1 (1 and 0 where absent) */
inline void load_param_run(__global const PARAM_T *weight, __global const PARAM_T *bias, const ulong i,
                           const int ok, ACC_T *wv, ACC_T *bv) {
#if HAS_WEIGHT
    param_run(weight, i, ok, wv);
#else
    fill_run(wv, 1);
#endif
#if HAS_BIAS
    param_run(bias, i, ok, bv);
#else
    fill_run(bv, 0);
#endif
}
/* RESULT_WB of a run d[VEC] whose first element is element i of the row */
#define APPLY_PARAM_RUN(d, i, ok) do {                                                         \
        ACC_T wv_[VEC];                                                                       \
        ACC_T bv_[VEC];                                                                       \
        load_param_run(weight, bias, (i), (ok), wv_, bv_);                                    \
        UNROLL_LOOP for (uint k_ = 0; k_ < VEC; ++k_) {                                       \
            (d)[k_] = RESULT_WB((d)[k_], wv_[k_], bv_[k_]);                                   \
        }                                                                                     \
    } while (0)
#endif

#define RESCUE (NORM != NORM_RMS && CACHE != CACHE_REG && PHASE != 2)
#define RESCUE_CANCEL 16  /* mean(d)^2 / var past which a task adds again: <= ~4 bits lost */
/* WILD above: a power of two whose multiple of the type's largest value squares, n = 2^40
 * times, below it (so a lane's sum of squares of x * WILD_SCALE is finite for finite x); values
 * it takes below the normal range are far below the row's, which reach ACC_MAX / n */
#if ACC_BYTES == 8
#define WILD_SCALE 2.6497349136889905e-169  /* 2^-560 */
#define WILD_UNSCALE 3.7739624248215414e+168 /* 2^560 */
#else
#define WILD_SCALE 8.077935669463161e-28f   /* 2^-90 */
#define WILD_UNSCALE 1.2379400392853803e+27f /* 2^90 */
#endif
/* the statistics of a WILD task: var +inf where the scaled sum is finite (every element is),
 * else NaN */
inline ACC_T wild_var(const ACC_T scaled_sum) {
    return isfinite(scaled_sum) ? (ACC_T)INFINITY : (ACC_T)NAN;
}
/* the shift of a task's sums: the row's first element, a split chunk's own first element */
#if NORM != NORM_RMS && PHASE == 1
#define PILOT chunk_x0
#else
#define PILOT x0
#endif
/* The rescue's walk and team reduces sit in a branch that must be uniform over whatever the
 * reduces synchronise: the team's own flag where that is so (one-lane teams, a team of the
 * whole group, of one whole sub-group); on CUDA, teams inside a warp take the warp's vote
 * (its shuffles name every lane); else every team walks (zero elements unless it needs the
 * rescue) and reduces. A moments task of a short row is a few instructions a lane: on an H100
 * reduces run always cost float32 moments of 16777216 x 16 7 % (1964 -> 1827 GB/s); with the
 * warp's vote it ran at 2037. */
#if LANES == 1 || LANES == WG_SIZE || (LANES == SG_SIZE && SG_MODE != SG_LOCAL)
#define RESCUE_BRANCH(redo) (redo)
#define RESCUE_BRANCH_ALWAYS 0
#elif LANES < SG_SIZE && SG_MODE != SG_LOCAL && HAS_SUB_GROUP_VOTE
#define RESCUE_BRANCH(redo) sub_group_any(redo)
#define RESCUE_BRANCH_ALWAYS 0
#else
#define RESCUE_BRANCH(redo) 1
#define RESCUE_BRANCH_ALWAYS 1  /* every team would take the branch on every row */
#endif
/* the shifted sums' variance sum2 / n - (sum1 / n)^2 cancelled more than RESCUE_CANCEL allows,
 * or sum2 overflowed while sum1 did not (every term finite); inv_n = 1 / n (no division a
 * task: short rows' moments on CUDA paid for two) */
inline int sums_lost(const ACC_T sum1, const ACC_T sum2, const ACC_T inv_n) {
    const ACC_T m = sum1 * inv_n;
    return m * m > (ACC_T)RESCUE_CANCEL * (sum2 * inv_n - m * m) || (isinf(sum2) && isfinite(sum1));
}
/* element i of the task, for a rescue's walk: from the team's row buffer with CACHE 1, else
 * from memory (CACHE 0 too: a lane's serial walk, SCALED below) */
#if CACHE == CACHE_LOCAL
#define RESCUE_X(i) c[i]
#else
#define RESCUE_X(i) LOAD(p, i)
#endif
/* SCALED (rms_norm and layer_norm): a finite row whose squares pass the type's range (float32
 * values near 1e30: 1e60 per square) normalises to finite values all the same, so its
 * statistics are taken again of x * WILD_SCALE (squares of finite values stay finite n = 2^40
 * times over) and the write scales x by it too (`xs`: 1, or WILD_SCALE; eps * xs^2 then
 * vanishes beside the scaled mean square, which passes ACC_MAX * xs^2 / n). These rows had
 * written 0 (x / inf) and layer_norm 0 * w + b, as numpy's and torch's float32 formulas do.
 * A row holding an inf or NaN keeps those results (its scaled sums are inf or NaN too).
 * float16 input never needs it (its squares add in float32: 65504^2 * 2^40 is finite), and there
 * SCALED_ROWS 0 keeps xs a literal 1: the write's multiply by a variable xs cost PoCL float16
 * rms_norm and layer_norm of 8192 x 1000 21-28 % (benchmarks/norm_scaled_2026-11-27).
 * The team walks the row (from memory, or CACHE 1's buffer) and reduces, in a branch
 * (SCALED_BRANCH) uniform as RESCUE's; where that branch could not be the team's own
 * (RESCUE_BRANCH_ALWAYS: every team would walk and reduce on every row) each lane walks the
 * whole row alone instead, in the same order, so all lanes agree. The planner gives such
 * teams (a sub-group or fewer lanes) short rows; a forced one on a long row is slow there, for
 * rows past the range only, and still right. */
#if IN_HALF
#define SCALED_ROWS 0
#define XS_T const ACC_T
#else
#define SCALED_ROWS 1
#define XS_T ACC_T
#endif
#if RESCUE_BRANCH_ALWAYS
#define SCALED_BRANCH(big) (big)
#define SCALED_FIRST 0
#define SCALED_STEP 1
#define SCALED_REDUCE(v) (v)
#else
#define SCALED_BRANCH(big) RESCUE_BRANCH(big)
#define SCALED_FIRST lane
#define SCALED_STEP LANES
#define SCALED_REDUCE(v) team_reduce((v), K_SUM, scratch, lid, lane)
#endif
/* x * WILD_SCALE - shift of the elements i_ this lane walks (all `len` of them, or none) */
#define SCALED_WALK(len, z, body)                                                             \
    for (ulong i_ = SCALED_FIRST; i_ < (len); i_ += SCALED_STEP) {                            \
        const ACC_T z = RESCUE_X(i_) * (ACC_T)WILD_SCALE;                                     \
        body;                                                                                 \
    }
#if RESCUE
/* (x - shift) * scale of this lane's elements of the task (i = lane, lane + LANES, ... < len)
 * into compensated sums; scale is 1, or WILD_SCALE around 0 */
#define RESCUE_WALK(len, shift, scale, a1, k1, a2, k2)                                        \
    for (ulong i_ = lane; i_ < (len); i_ += LANES) {                                          \
        moments_add(&(a1), &(k1), &(a2), &(k2), (RESCUE_X(i_) - (shift)) * (scale));           \
    }
#endif

/* A variance from sums, with rounding below zero clamped; fmax would also turn a NaN
 * variance into 0, so NaN (a NaN or inf in the row) is carried past it. */
inline ACC_T var_clamped(const ACC_T v) {
    return isnan(v) ? v : fmax(v, (ACC_T)0);
}
/* The variance mean(d*d) - mean(d)^2 of shifted sums (sq_mean = sum2 / n), the square
 * unrounded in a fused multiply-add: an overflowed sum of squares stays inf, as numpy's float32
 * sum of squared deviations does, where mean(d)^2 rounded alone may overflow beside it
 * (float32 values near 1.65e38 spread by 1e35: the rescued sum of d, ~1e31, squared) and
 * inf - inf gave NaN. */
inline ACC_T var_of_sums(const ACC_T sq_mean, const ACC_T mean_d) {
    return var_clamped(fma(-mean_d, mean_d, sq_mean));
}
/* moments: lane 0 of a row's first task writes its mean and variance */
inline void put_moments(__global ACC_T *stats, const task_t t, const ulong n_rows, const uint lane,
                        const ACC_T mean, const ACC_T var) {
    if (lane == 0 && t.len > 0 && t.start == 0) {
        stats[t.row] = mean;
        stats[n_rows + t.row] = var;
    }
}

/* d = x - x0 into a lane's compensated sums of d and d * d */
inline void moments_add(ACC_T *s1, ACC_T *c1, ACC_T *s2, ACC_T *c2, const ACC_T d) {
    nsum_add(s1, c1, d);
    nsum_add(s2, c2, d * d);
}

#if WALK_RUNS
/* A run of VEC elements into the compensated sums: plain sums over the run (~VEC ulp, no
 * branch, so CPU compilers keep it in vector registers), then one compensated add each, as
 * the CPU register rows do (RUN_SUM_ADD). The element-wise compensated walk held PoCL's
 * norms of long rows at 0.4-0.7 GB/s. */
inline void moments_add_run(ACC_T *s1, ACC_T *c1, ACC_T *s2, ACC_T *c2, const ACC_T *d, const ACC_T x0) {
    ACC_T r1 = 0, r2 = 0;
    UNROLL_LOOP for (uint k = 0; k < VEC; ++k) {
        const ACC_T e = d[k] - x0;
        r1 += e;
        r2 += e * e;
    }
    nsum_add(s1, c1, r1);
    nsum_add(s2, c2, r2);
}
#endif

#if PHASE == 2 && NORM != NORM_RMS
/* PHASE 2: the row's mean and M2 from its chunks' partials (sum of x - c, M2, shift c, SCALED
 * flag), chunk j holding n_j elements with mean m_j = c + sum / n_j: the estimate
 * sum(m_j n_j / n) (weights below 1: no overflow for finite means), the mean's offset from a
 * reference r (below), sum((c - r) n_j / n + sum / n) (c near its chunk's data: c - r exact
 * where close), and M2 = sum(M2_j + n_j (m_j - mean)^2) (Chan's merge). No division a
 * partial: PoCL folds hundreds a task, alone. A chunk whose elements include an inf or NaN has
 * an inf or NaN mean (PHASE 1's WILD), so r is one where the row holds one.
 * sc 1: in WILD_SCALE units (SCALED), the chunks that did not take them scaled on the way in
 * (exact, but for values far below the row's, which vanish beside it). first, step, team: the
 * lanes' share of the chunks and the team's reduce (lane, LANES, 1), or a lane alone folding
 * them all (0, 1, 0: SCALED_BRANCH's serial form). */
typedef struct { ACC_T mean_est, r, mean_off, m2; } merge_t;
inline ACC_T merge_sum(const ACC_T v, const int team, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
    return team ? team_reduce(v, K_SUM, scratch, lid, lane) : v;
}
inline merge_t merge_chunks(__global const ACC_T *partials, const ulong row, const uint parts, const ulong row_len,
                            const ulong chunk_len, const int sc, const uint first, const uint step, const int team,
                            LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
    const ACC_T inv_row_len = (ACC_T)1 / (ACC_T)row_len;
    const ACC_T n_last = (ACC_T)(row_len - (SPLIT - 1) * chunk_len);
    const ACC_T inv_chunk = (ACC_T)1 / (ACC_T)chunk_len, inv_last = (ACC_T)1 / n_last;
    const ACC_T w_chunk = (ACC_T)chunk_len * inv_row_len, w_last = n_last * inv_row_len;
#define CHUNK_SCALED(j, v) (sc && PARTIAL(row, j, 3) == 0 ? (v) * (ACC_T)WILD_SCALE : (v))
#define CHUNK_SUM(j) CHUNK_SCALED(j, PARTIAL(row, j, 0))
#define CHUNK_SHIFT(j) CHUNK_SCALED(j, PARTIAL(row, j, 2))
#define CHUNK_M2(j) CHUNK_SCALED(j, CHUNK_SCALED(j, PARTIAL(row, j, 1)))
#define CHUNK_COUNT(j) ((j) == SPLIT - 1 ? n_last : (ACC_T)chunk_len)
#define CHUNK_WEIGHT(j) ((j) == SPLIT - 1 ? w_last : w_chunk)
/* m_j - c, unrounded by c's magnitude (m_j itself rounds at the ulp of the data's offset) */
#define CHUNK_DEV(j) (CHUNK_SUM(j) * ((j) == SPLIT - 1 ? inv_last : inv_chunk))
#define CHUNK_MEAN(j) (CHUNK_SHIFT(j) + CHUNK_DEV(j))
    merge_t m;
    ACC_T s1 = 0, c1 = 0, s2 = 0, c2 = 0;
    for (uint j = first; j < parts; j += step) {
        nsum_add(&s1, &c1, CHUNK_MEAN(j) * CHUNK_WEIGHT(j));
    }
    m.mean_est = merge_sum(nsum_value(s1, c1), team, scratch, lid, lane);
    /* r: the estimate, or the first chunk's shift where that lies within ~100 ulp of it.
     * In an all-equal row r is then the value itself, and every c - r and the mean's
     * offset are exactly 0: around the estimate alone, the weights' rounding had left
     * them apart (-1e19 x 10^6: variance 4.3e9, layer_norm -1). Not the shift always: a
     * first chunk's mean far from the row's (an outlier in it) cost the offsets' sum
     * ~|c - r| * eps each (9e-6 of the mean for 1e6 and then N(0, 1), 122 chunks). */
    const ACC_T c_first = CHUNK_SHIFT(0);
    const ACC_T near = fabs(m.mean_est) * (ACC_T)(ACC_BYTES == 8 ? 1e-13 : 1e-5);
    m.r = !isfinite(m.mean_est) ? (ACC_T)0 : fabs(c_first - m.mean_est) <= near ? c_first : m.mean_est;
    s1 = 0;
    c1 = 0;
    for (uint j = first; j < parts; j += step) {
        nsum_add(&s1, &c1, (CHUNK_SHIFT(j) - m.r) * CHUNK_WEIGHT(j) + CHUNK_SUM(j) * inv_row_len);
    }
    /* mean - r; inf where two chunks' means lie more than the type's range apart (the
     * variance then passes it too) */
    m.mean_off = merge_sum(nsum_value(s1, c1), team, scratch, lid, lane);
    for (uint j = first; j < parts; j += step) {
        const ACC_T dm = (CHUNK_SHIFT(j) - m.r) + CHUNK_DEV(j) - m.mean_off;
        nsum_add(&s2, &c2, CHUNK_M2(j) + CHUNK_COUNT(j) * dm * dm);
    }
    m.m2 = merge_sum(nsum_value(s2, c2), team, scratch, lid, lane);
    return m;
#undef CHUNK_SCALED
#undef CHUNK_SUM
#undef CHUNK_SHIFT
#undef CHUNK_M2
#undef CHUNK_COUNT
#undef CHUNK_WEIGHT
#undef CHUNK_DEV
#undef CHUNK_MEAN
}
#endif

/* The write of an element x with weight wt and bias b from its row's constants, in one text
 * for the walked write and FLAT_WRITE's PHASE 3, whose bits must agree: rms_norm, and
 * layer_norm centred on shift + mean_d ((x * xs - shift) - mean_d: both differences are small
 * next to x, so a large mean cancels exactly; xs: 1, or SCALED's WILD_SCALE; a fused
 * multiply-add where the compiler contracts). Register rows (CACHE 0) centre on cx + cm. */
#define RMS_WB(x, wt) ((x) * xs * inv * (wt))
#define CENTRED_WB(x, wt, b) ((((x) * xs - shift) - mean_d) * inv * (wt) + (b))
/* FLAT_WRITE: where row r's write constants (xs, shift, mean_d, inv) follow the partials */
#define WRITE_CONSTANTS(r) (partials + n_rows * SPLIT * PARTIAL_SLOTS + FLAT_WRITE_SLOTS * (ulong)(r))

/* ---- CPU_PASSES (planner: CPU runtimes; never CUDA) ------------------------------------- */
/* One work-item a task, whose two walks of a row read from memory (CACHE 2) go in OpenCL
 * vectors: the statistics (cpu_moments), then the write (cpu_norm_write). Everything between
 * them (RESCUE, WILD, SCALED, the split rows' partials and merge) is the scalar code every
 * plan runs: their extra walks read the row element by element, for the rows that need them
 * only. The row stays in the core's L1/L2 between the walks. The register rows this replaces
 * (CACHE 0: a private array of NPER floats a work-item) live in memory on PoCL and Intel's
 * runtime, and so did WALK_RUNS' run arrays: layer_norm of 62500 x 128 float32 read 3.2 GB/s
 * on pip's PoCL where torch (2 threads) read 18. Plain OpenCL C vector types: the planner
 * sets CPU_PASSES only for OpenCL CPU plans (as softmax.cl's). */
#ifndef CPU_PASSES
#define CPU_PASSES 0
#endif
#if CPU_PASSES
#if LANES != 1 || CACHE != CACHE_NONE || VEC < 2 || IN_HALF != OUT_HALF || FLAT_WRITE || PARAM_RUNS
#error "CPU_PASSES needs LANES 1, CACHE 2, VEC > 1, the input's dtype out, no FLAT_WRITE or PARAM_RUNS"
#endif
/* vector loads and stores spelled with operators: PoCL 3.0 from pip calls vloadn / vstoren
 * out of line */
#include "cpu_passes.h"
/* The sums of d = x - shift and of d * d over `len` elements at p into the compensated sums
 * (s1, c1) and (s2, c2), as moments_add gives them element by element: each vector lane
 * Neumaier-compensated, then the lanes folded, then the tail. A sum the
 * caller never reads (rms_norm's of d) is dropped by the compiler. */
inline void cpu_moments(__global const IN_T *p, const ulong len, const ACC_T shift, ACC_T *s1, ACC_T *c1,
                        ACC_T *s2, ACC_T *c2) {
    const ulong runs = len / VEC, blocks = runs / CPU_BLOCK_RUNS;
    CPU_ACCV a1 = (CPU_ACCV)0, k1 = (CPU_ACCV)0, a2 = (CPU_ACCV)0, k2 = (CPU_ACCV)0;
    /* CPU_BLOCK_RUNS runs added plainly in each lane (~CPU_BLOCK_RUNS ulp of their magnitudes,
     * as WALK_RUNS' runs), then one compensated step: a step a run cost pip's PoCL moments of
     * 8000 x 1000 float32 4.6-5.5 ms against 3.0-4.3 (blocks of 4 to 16 level; loaded host) */
    for (ulong b = 0; b < blocks; ++b) {
        CPU_ACCV b1 = (CPU_ACCV)0, b2 = (CPU_ACCV)0;
        for (uint j = 0; j < CPU_BLOCK_RUNS; ++j) {
            const CPU_ACCV d = CPU_LOAD_ACC(p + (b * CPU_BLOCK_RUNS + j) * VEC) - shift;
            b1 += d;
            b2 += d * d;
        }
        CPU_NSUM_ADD(a1, k1, b1);
        CPU_NSUM_ADD_POS(a2, k2, b2);
    }
    /* the runs past the last whole block: a shorter block, then one step. Rows of 32 and 64
     * (4 and 8 runs of float8) never fill a block, and a step a run cost pip's PoCL rms_norm
     * 250000 x 32 8.2-9.2 ms against 5.8-8.8 (three alternating rounds, noisy host) */
    if (blocks * CPU_BLOCK_RUNS < runs) {
        CPU_ACCV b1 = (CPU_ACCV)0, b2 = (CPU_ACCV)0;
        for (ulong r = blocks * CPU_BLOCK_RUNS; r < runs; ++r) {
            const CPU_ACCV d = CPU_LOAD_ACC(p + r * VEC) - shift;
            b1 += d;
            b2 += d * d;
        }
        CPU_NSUM_ADD(a1, k1, b1);
        CPU_NSUM_ADD_POS(a2, k2, b2);
    }
    /* each lane's compensated value, the lanes then added plainly (VEC terms, as a run of
     * WALK_RUNS: ~VEC ulp of their magnitudes); a compensated fold (fabs: a call on pip's
     * PoCL) cost short rows more than their runs */
    const CPU_ACCV v1 = CPU_NSUM_VALUE(a1, k1), v2 = CPU_NSUM_VALUE(a2, k2);
    const ACC_T f1 = CPU_HSUM(v1), f2 = CPU_HSUM(v2);
    nsum_add(s1, c1, f1);
    nsum_add(s2, c2, f2);
    for (ulong i = runs * VEC; i < len; ++i) {
        moments_add(s1, c1, s2, c2, LOAD(p, i) - shift);
    }
}

/* weight and bias of elements i .. i + VEC - 1 as vectors (1 and 0 where absent) */
#if HAS_WEIGHT && PARAM_HALF
#define CPU_W(i) cpu_half_bits_to_float(CPU_VLOAD(ushort, (__global const ushort *)(weight + (i))))
#elif HAS_WEIGHT
#define CPU_W(i) CPU_VLOAD(ACC_T, weight + (i))
#else
#define CPU_W(i) ((ACC_T)1)
#endif
#if HAS_BIAS && PARAM_HALF
#define CPU_B(i) cpu_half_bits_to_float(CPU_VLOAD(ushort, (__global const ushort *)(bias + (i))))
#elif HAS_BIAS
#define CPU_B(i) CPU_VLOAD(ACC_T, bias + (i))
#else
#define CPU_B(i) ((ACC_T)0)
#endif

/* The write of `len` elements at p to q, element i taking weight and bias start + i, by the
 * walked write's formula (RMS_WB, CENTRED_WB below: operators, so one text for vectors and
 * scalars) */
#if NORM == NORM_RMS
#define CPU_RESULT(x, wt, b) RMS_WB(x, wt)
#else
#define CPU_RESULT(x, wt, b) CENTRED_WB(x, wt, b)
#endif
inline void cpu_norm_write(__global const IN_T *p, __global OUT_T *q, const ulong len,
                           __global const PARAM_T *weight, __global const PARAM_T *bias, const ulong start,
                           const ACC_T xs, const ACC_T shift, const ACC_T mean_d, const ACC_T inv) {
    (void)weight;
    (void)bias;
    (void)shift;
    (void)mean_d;
    const ulong runs = len / VEC;
    for (ulong r = 0; r < runs; ++r) {
        const ulong i = r * VEC;
        CPU_STORE(CPU_RESULT(CPU_LOAD_ACC(p + i), CPU_W(start + i), CPU_B(start + i)), q + i);
    }
    for (ulong i = runs * VEC; i < len; ++i) {
        STORE(CPU_RESULT(LOAD(p, i), W(start + i), B(start + i)), q, i);
    }
}
#endif /* CPU_PASSES */

#if PHASE == 3
/* FLAT_WRITE's write (above): work-item j of group g writes run (g % tiles) * WG_SIZE + j of
 * row g / tiles with the constants PHASE 2 left, by the same formula as a walked write */
#if NORM == NORM_RMS
#define RESULT_WB(x, wt, b) RMS_WB(x, wt)
#else
#define RESULT_WB(x, wt, b) CENTRED_WB(x, wt, b)
#endif
__kernel KERNEL_WG_SIZE(WG_SIZE)
void norm_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               __global const PARAM_T *restrict weight, __global const PARAM_T *restrict bias,
               __global ACC_T *restrict stats, __global ACC_T *restrict partials,
               const ulong n_rows, const ulong row_len, const ulong chunk_len, const ACC_T eps)
{
    (void)stats;
    (void)chunk_len;
    (void)eps;
    const uint tiles = (uint)((row_len / VEC + WG_SIZE - 1) / WG_SIZE);
    const uint group = (uint)get_group_id(0);
    const uint row = group / tiles;
    const ulong i = ((ulong)(group - row * tiles) * WG_SIZE + get_local_id(0)) * VEC;
    if (row >= n_rows || i >= row_len) {
        return;
    }
    __global const ACC_T *wc = WRITE_CONSTANTS(row);
    const ACC_T xs = wc[0], shift = wc[1], mean_d = wc[2], inv = wc[3];
    (void)shift;
    (void)mean_d;
    const ulong at = (ulong)row * row_len + i;
    /* uniform over the launch: row_len is a multiple of VEC, so every row starts aligned where the first does */
    const int vec_ok = VEC_OK(in + in_offset, out + out_offset);
    ACC_T d[VEC];
    load_run(in + in_offset + at, vec_ok, d);
#if PARAM_RUNS
    APPLY_PARAM_RUN(d, i, params_aligned(weight, bias, 0));
#else
    UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
        d[e] = RESULT_WB(d[e], W(i + e), B(i + e));
    }
#endif
    store_run(d, out + out_offset + at, vec_ok);
}
#else
__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void norm_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               __global const PARAM_T *restrict weight, __global const PARAM_T *restrict bias,
               __global ACC_T *restrict stats, __global ACC_T *restrict partials,
               const ulong n_rows, const ulong row_len, const ulong chunk_len, const ACC_T eps)
{
    ROW_KERNEL_START;
#if ROW_RUNS_EXACT
    (void)row_len;
#define row_len ((ulong)(LANES * NPER))  /* ROW_RUNS_EXACT (row_common.h): a constant */
#endif
#if RESCUE || (PHASE == 2 && NORM != NORM_RMS)
    const ACC_T inv_row_len = (ACC_T)1 / (ACC_T)row_len;
#endif
#if TEAM_FIRST_X0 == 2
    __local ACC_T team_x0[TEAMS];
#endif
#if CACHE == CACHE_REG && NORM == NORM_LAYER && !SCALED_ROWS
    /* DIV_ROW_LEN(x) = x / row_len: where row_len is a power of two, x times its reciprocal
     * (exact: the same single rounding of x / row_len), no division a task (float16 rows of
     * 16 on an H200: two IEEE divisions, ~20 of ~235 instructions a trip) */
    const int len_pow2 = (row_len & (row_len - 1)) == 0;
    const ACC_T inv_len_pow2 = (ACC_T)1 / (ACC_T)row_len;
#define DIV_ROW_LEN(x) (len_pow2 ? (x) * inv_len_pow2 : (x) / (ACC_T)row_len)
#endif
#if CACHE == CACHE_REG && NORM == NORM_LAYER && SCALED_ROWS
/* float32 rows of 16 on an H200: the hoisted reciprocal took registers (40 -> 47) and lost */
#define DIV_ROW_LEN(x) ((x) / (ACC_T)row_len)
#endif

    for (ulong base = FIRST_BASE; base < n_rows * SPLIT; base += stride) {
        TASK_START(base);

#if NORM == NORM_RMS
#define x0 ((ACC_T)0) /* no shift (a macro: a variable no phase reads is a -Werror warning) */
#elif TEAM_FIRST_X0
        /* the row's first element is lane 0's first: passed along the team (below) */
#elif PHASE == 0
        /* the row's first element */
        const ACC_T x0 = t.len > 0 ? LOAD(in + in_offset + t.row * row_len, 0) : (ACC_T)0;
#endif
#if NORM != NORM_RMS && PHASE == 1
        const ACC_T chunk_x0 = t.len > 0 ? LOAD(p, 0) : (ACC_T)0;
#endif
#if PHASE == 2 && NORM == NORM_RMS
        /* fold the row's chunk sums of x*x, and their scaled twins (SCALED) */
        ACC_T s2 = 0, c2 = 0;
#if SCALED_ROWS
        ACC_T s3 = 0, c3 = 0;
#endif
        for (uint j = lane; j < SPLIT; j += LANES) {
            nsum_add(&s2, &c2, PARTIAL(t.row, j, 1));
#if SCALED_ROWS
            nsum_add(&s3, &c3, PARTIAL(t.row, j, 2));
#endif
        }
#elif PHASE == 2
#if NORM == NORM_MOMENTS
        /* only the row's first chunk writes the statistics: the other tasks fold nothing */
        const uint parts = t.start == 0 ? SPLIT : 0;
#else
        const uint parts = SPLIT;
#endif
        merge_t mg = merge_chunks(partials, t.row, parts, row_len, chunk_len, 0, lane, LANES, 1, scratch, lid, lane);
#if NORM == NORM_LAYER
        /* SCALED: a chunk that took WILD_SCALE units (PHASE 1), or a finite row (a finite mean
         * estimate) whose merge passed the range, merges again in those units */
#if !SCALED_ROWS
        const ACC_T xs = 1;
#else
        ACC_T xs = 1;
        ACC_T flagged = 0;
        for (uint j = lane; j < parts; j += LANES) {
            flagged += PARTIAL(t.row, j, 3);
        }
        flagged = team_reduce(flagged, K_SUM, scratch, lid, lane);
        const int big = t.len > 0 && isfinite(mg.mean_est) && (flagged > 0 || !isfinite(mg.mean_off) || !isfinite(mg.m2));
        if (SCALED_BRANCH(big)) {
            const merge_t ms = merge_chunks(partials, t.row, big ? parts : 0, row_len, chunk_len, 1, SCALED_FIRST,
                                            SCALED_STEP, !RESCUE_BRANCH_ALWAYS, scratch, lid, lane);
            if (big) {
                mg = ms;
                xs = (ACC_T)WILD_SCALE;
            }
        }
#endif
#endif
        const ACC_T mean_est = mg.mean_est, r = mg.r, mean_off = mg.mean_off;
#elif CACHE == CACHE_REG
        ACC_T s2 = 0, c2 = 0;
#if NORM != NORM_RMS
        ACC_T s1 = 0, c1 = 0;
#endif
        /* the row in registers: sums run by run (RUN_SUM_ADD: plain on GPUs, at most NPER
         * terms per lane, ~NPER ulp; compensated across the runs of a CPU's long rows), and
         * for layer_norm two passes over the registers, sum(d) then sum((d - mean_d)^2),
         * which need no compensation for the variance's cancellation either */
        ACC_T v[NPER];
#if TEAM_FIRST_X0
        load_runs_padded(v, p, t.len, vec_ok, lane, 0, 0);  /* runs past the row: skipped, unpadded */
#if TEAM_FIRST_X0 == 1
        const ACC_T x0 = sub_group_shuffle(v[0], get_sub_group_local_id() & ~(LANES - 1u));
#else
        if (lane == 0) {
            team_x0[team] = v[0];
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* rewritten a trip later, after team_reduce's barriers */
        const ACC_T x0 = team_x0[team];
#endif
#else
        load_runs(v, p, t.len, vec_ok, lane, x0);  /* padding: d = 0 */
#endif
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            ACC_T run = 0;
            UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                const ACC_T d = v[j * VEC + e] - x0;
#if NORM == NORM_RMS
                run += d * d;
#else
                run += d;
#endif
            }
#if TEAM_FIRST_X0
            run = RUN_IN(j, t.len) ? run : (ACC_T)0;   /* whole runs past the row: 0 padding */
#endif
#if NORM == NORM_RMS
            RUN_SUM_ADD(s2, c2, run);
#else
            RUN_SUM_ADD(s1, c1, run);
#endif
        }
#if NORM == NORM_LAYER
        const ACC_T mean_reg = DIV_ROW_LEN(team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane));
#elif NORM != NORM_RMS
        const ACC_T mean_reg = team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane) / (ACC_T)row_len;
#endif
#if NORM != NORM_RMS
#if NORM == NORM_MOMENTS
        /* moments, whose mean is a result: the corrected two-pass sums, around the mean's
         * estimate m1 itself, and the deviations' sum corrects m1. x0 + mean_reg alone lost
         * bits where x0 lies far from the mean (0 then 99 values near 1e19: mean 1.7e-5 off).
         * A WILD row's sums come out NaN here, and are taken again below. */
        const ACC_T m1 = x0 + mean_reg;
        s1 = 0;
        c1 = 0;
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_IN(j, t.len)) {
                ACC_T run = 0, run1 = 0;
                UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                    const ACC_T d = v[j * VEC + e] - m1;
                    run1 += d;
                    run += d * d;
                }
                RUN_SUM_ADD(s1, c1, run1);
                RUN_SUM_ADD(s2, c2, run);
            }
        }
#else
        /* WILD (uniform over the team): the second pass sums squares of x * WILD_SCALE instead
         * (finite for finite x), and the write centres x on 0. One loop, scaled (exact with
         * scale 1; a fused multiply-add where the compiler contracts it): a loop of its own for
         * WILD rows cost PoCL layer_norm of 1024 x 4096 28 % (4.2 -> 3.0 GB/s) and an explicit
         * fma() 60 % (PoCL calls it per element); on an H100 each form was level. */
#if NPER * LANES >= 1024
        /* rows of 1024 and longer: centred on x0 + mean_reg as an unrounded pair m_hi + m_lo
         * (TwoSum). (x - x0) - mean_reg rounds x - x0 at the distance of x0 from the row, up to
         * sqrt(K) deviations: a float32 row of 1e7 then 4999 values near -2000 wrote y 1.06e-5
         * off, past the 1e-5 bound. x - (x0 + mean_reg) rounded to one float would round a
         * large mean instead (rows near 1e4 +- 1: 8.6e-4 of y). x - m_hi is exact near the
         * mean and rounds at the output's own scale far from it. A mean that rounds past the
         * range is a WILD row. Shorter rows keep (x - x0) - mean_reg, whose error is at most
         * ~sqrt(K) ulp of a deviation: the pair's five adds a task cost an H200's float32
         * layer_norm of 4194304 x 64 and 442368 x 128 7-10 %. */
        const ACC_T m_hi = x0 + mean_reg;
        const ACC_T m_b = m_hi - x0;
        const ACC_T m_lo = (x0 - (m_hi - m_b)) + (mean_reg - m_b);
        int wild = !isfinite(mean_reg) || !isfinite(m_hi);
        ACC_T cx = wild ? (ACC_T)0 : m_hi, cm = wild ? (ACC_T)0 : m_lo;
#else
        int wild = !isfinite(mean_reg);
        ACC_T cx = wild ? (ACC_T)0 : x0, cm = wild ? (ACC_T)0 : mean_reg;
#endif
        const ACC_T scale = wild ? (ACC_T)WILD_SCALE : (ACC_T)1;
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_IN(j, t.len)) {
                ACC_T run = 0;
                UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                    const ACC_T d = (v[j * VEC + e] - cx) * scale - cm;
                    run += d * d;
#if !SCALED_ROWS
                    /* the write's (x - cx) - cm (scale 1: the same rounding); WILD: x * WILD_SCALE,
                     * which the write's inv (0 or NaN) takes to what x would give. Not with
                     * SCALED_ROWS, whose write may centre x elsewhere: float32 rows of 16 kept
                     * x for it again (40 -> 48 registers) and lost 2-5 % on an H200 */
                    v[j * VEC + e] = d;
#endif
                }
                RUN_SUM_ADD(s2, c2, run);
            }
        }
#endif
#endif
#else
        ACC_T s1 = 0, c1 = 0, s2 = 0, c2 = 0;
#if CPU_PASSES
        cpu_moments(p, t.len, PILOT, &s1, &c1, &s2, &c2);
#elif WALK_RUNS
        LANE_WALK_RUNS(w, p, 0, out, d, moments_add_run(&s1, &c1, &s2, &c2, d, PILOT), i, x,
                       moments_add(&s1, &c1, &s2, &c2, x - PILOT));
#else
        LANE_WALK(w, p, 0, out, i, x, CACHE_PUT(i, x); moments_add(&s1, &c1, &s2, &c2, x - PILOT));
#endif
#endif
#if PHASE == 2 && NORM != NORM_RMS
        ACC_T sum2 = mg.m2;  /* the row's M2 */
#else
        ACC_T sum2 = team_reduce(nsum_value(s2, c2), K_SUM, scratch, lid, lane);
#endif
#if ((NORM != NORM_RMS && CACHE != CACHE_REG) || PHASE == 1) && PHASE != 2
        ACC_T sum1 = team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane);
#endif
#if NORM == NORM_RMS
        /* SCALED (above): xs scales the write; sum2 becomes the sum of (x * xs)^2. A row's
         * (PHASE 1: a chunk's) sum of squares that overflowed is taken again scaled: by every
         * lane alone where a team's branch could not be its own (RESCUE_BRANCH_ALWAYS), else
         * by the team. */
#if PHASE != 1
        XS_T xs = 1;
#endif
#if SCALED_ROWS
        const int big = t.len > 0 && isinf(sum2);
#endif
#if SCALED_ROWS && PHASE == 2
        /* the chunks' scaled sums (each finite chunk's sum times WILD_SCALE^2, or its own
         * scaled walk), folded above */
        const ACC_T sum2_scaled = team_reduce(nsum_value(s3, c3), K_SUM, scratch, lid, lane);
#elif SCALED_ROWS
        ACC_T sum2_scaled = sum2 * (ACC_T)WILD_SCALE * (ACC_T)WILD_SCALE;
        if (SCALED_BRANCH(big)) {
            ACC_T a = 0, k = 0;
            SCALED_WALK(big ? t.len : 0, z, nsum_add(&a, &k, z * z));
            a = SCALED_REDUCE(nsum_value(a, k));
            if (big) {
                sum2_scaled = a;
            }
        }
#endif
#if PHASE != 1 && SCALED_ROWS
        if (big) {
            sum2 = sum2_scaled;
            xs = (ACC_T)WILD_SCALE;
        }
#endif
#endif
#if PHASE == 2 && NORM != NORM_RMS
        /* sum2 is the row's M2. WILD: the row holds an inf or NaN (mean_est is one: the
         * variance NaN, moments' mean mean_est), or its deviations pass the type's range
         * (mean_off or M2 inf: the variance +inf; moments' mean r + mean_off, or mean_est where
         * that overflowed); layer_norm writes NaN or 0 * w + b */
        const int wild = t.len > 0 && (!isfinite(mean_est) || !isfinite(mean_off) || !isfinite(sum2));
#endif
#if NORM != NORM_RMS && CACHE != CACHE_REG && PHASE != 2
        ACC_T shift = PILOT;  /* sum1 and sum2 are sums of x - shift and of its square */
#endif
#if RESCUE
        /* WILD above: the rescue's walk sums x * WILD_SCALE instead */
        int wild = t.len > 0 && !isfinite(sum1);
        {
            /* redo is uniform over the team (team_reduce results); see RESCUE above */
#if PHASE == 0
            const ACC_T inv_len = inv_row_len;
#else
            const ACC_T inv_len = (ACC_T)1 / (ACC_T)t.len;
#endif
            const int redo = wild || (t.len > 0 && sums_lost(sum1, sum2, inv_len));
            if (RESCUE_BRANCH(redo)) {
                const ACC_T mean_shift = wild ? (ACC_T)0 : redo ? shift + sum1 * inv_len : shift;
                const ACC_T scale = wild ? (ACC_T)WILD_SCALE : (ACC_T)1;
                ACC_T a1 = 0, k1 = 0, a2 = 0, k2 = 0;
                RESCUE_WALK(redo ? t.len : 0, mean_shift, scale, a1, k1, a2, k2);
                a2 = team_reduce(nsum_value(a2, k2), K_SUM, scratch, lid, lane);
                a1 = team_reduce(nsum_value(a1, k1), K_SUM, scratch, lid, lane);
                if (redo) {
                    shift = mean_shift;
                    sum1 = a1;
                    sum2 = a2;
                }
                if (redo && !wild && !isfinite(a1)) {
                    /* the deviations' running sum overflowed (values of both signs near the
                     * maximum, in an order whose prefix passes it: [2e38, 1.5e38 x4, 3e38 x5]
                     * gave mean -inf): by Cauchy-Schwarz the variance passes the range too. The
                     * mean is the first pass's estimate; layer_norm centres on 0 (it writes
                     * x * 0 * w + b, and x - shift may overflow) */
                    sum1 = 0;
                    sum2 = INFINITY;
#if NORM == NORM_LAYER && PHASE == 0
                    shift = 0;
#endif
                }
            }
        }
#endif

#if NORM == NORM_LAYER && PHASE != 2
        /* SCALED (above): a finite row (PHASE 1: chunk) whose variance (or its deviations'
         * sums) passed the range: the mean of x * WILD_SCALE, then the deviations from it and
         * their squares (two walks, three reduces, for such rows only); the write centres
         * x * xs on it (PHASE 1: the chunk's partials are in those units, and say so) */
#if PHASE == 0
        XS_T xs = 1;
#endif
#if !SCALED_ROWS
        const int big = 0;
        (void)big;
#elif CACHE == CACHE_REG
        /* WILD: sum2 is the sum of (x * WILD_SCALE)^2, finite where the row is */
        const int big = t.len > 0 && (wild ? isfinite(sum2) : isinf(sum2));
#else
        /* WILD: sum1 is the rescue's sum of x * WILD_SCALE, finite where the row is */
        const int big = t.len > 0 && (wild ? isfinite(sum1) : isinf(sum2));
#endif
#if SCALED_ROWS
        if (SCALED_BRANCH(big)) {
            const ulong len_ = big ? t.len : 0;
            ACC_T a = 0, k = 0;
            SCALED_WALK(len_, z, nsum_add(&a, &k, z));
            const ACC_T mean_s = SCALED_REDUCE(nsum_value(a, k)) / (ACC_T)t.len;  /* 0 / 0 unused */
            ACC_T a1 = 0, k1 = 0, a2 = 0, k2 = 0;
            SCALED_WALK(len_, z, moments_add(&a1, &k1, &a2, &k2, z - mean_s));
            a1 = SCALED_REDUCE(nsum_value(a1, k1));
            a2 = SCALED_REDUCE(nsum_value(a2, k2));
            if (big) {
#if PHASE == 0
                xs = (ACC_T)WILD_SCALE;
#endif
                wild = 0;
                sum2 = a2;
#if CACHE == CACHE_REG
                cx = mean_s;
                cm = a1 / (ACC_T)row_len;
#else
                shift = mean_s;
                sum1 = a1;
#endif
            }
        }
#endif
#endif

#if PHASE == 1 && NORM == NORM_RMS
        put_partials(partials, t, lane, sum1, sum2);
#if SCALED_ROWS
        if (lane == 0 && t.len > 0) {
            partials[PARTIAL_SLOTS * t.task + 2] = sum2_scaled;
        }
#endif
#elif PHASE == 1
        /* the chunk's sum of x - shift, its M2 (sum1 times its mean: sum1 * sum1 overflowed
         * first where sum2 had not; unrounded, as in var_of_sums) and the shift; WILD: sum 0,
         * the shift the chunk's mean (inf or NaN only where it holds one) and M2 inf or NaN */
        const ACC_T len_ = (ACC_T)t.len;
        put_partials(partials, t, lane, wild ? (ACC_T)0 : sum1, wild ? wild_var(sum1) : fma(-sum1, sum1 / len_, sum2));
        if (lane == 0 && t.len > 0) {
            partials[PARTIAL_SLOTS * t.task + 2] = wild ? sum1 / len_ * WILD_UNSCALE : shift;
#if NORM == NORM_LAYER
            partials[PARTIAL_SLOTS * t.task + 3] = big ? (ACC_T)1 : (ACC_T)0;
#else
            partials[PARTIAL_SLOTS * t.task + 3] = 0;
#endif
        }
#else
        const ACC_T n = (ACC_T)row_len;
#if NORM == NORM_RMS
        const ACC_T inv = rsqrt(sum2 / n + eps * xs * xs);
#define RESULT_WB(x, wt, b) RMS_WB(x, wt)
#elif CACHE == CACHE_REG
        /* two passes over the registers (above): sum2 is sum((d - mean_d)^2), which neither
         * cancels nor overflows before numpy's own two passes do */
#if NORM == NORM_MOMENTS
        const ACC_T mean_e = team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane) / n;
        /* mean_e: m1's error, tiny next to the spread. WILD: lane 0 alone reads the row again
         * for the sum of x * WILD_SCALE, inside its write. A moments task of a short row is a
         * few instructions a lane: a branch for every lane (with the team's reduce of that sum,
         * or selects through the pass) cost H100 float32 moments of 442368 x 128 11-13 %
         * (2535 -> 2215 GB/s). */
        if (lane == 0 && t.len > 0) {
            ACC_T mean_ = m1 + mean_e, var_ = var_of_sums(sum2 / n, mean_e);
            if (isfinite(mean_reg) && !isfinite(mean_e)) {
                /* the second pass's running sum of deviations overflowed: the variance passes
                 * the range (as in RESCUE's walk below); the mean is the first pass's */
                mean_ = m1;
                var_ = INFINITY;
            }
            if (!isfinite(mean_reg)) {
                ACC_T a = 0, k = 0;
                for (ulong i = 0; i < t.len; ++i) {
                    nsum_add(&a, &k, LOAD(p, i) * WILD_SCALE);
                }
                a = nsum_value(a, k);
                mean_ = a / n * WILD_UNSCALE;
                var_ = wild_var(a);
            }
            put_moments(stats, t, n_rows, lane, mean_, var_);
        }
#else
        /* SCALED: sum2 holds the squares of x * xs - cx, around cx + cm */
        const ACC_T var_ = big ? var_of_sums(DIV_ROW_LEN(sum2), cm) : wild ? wild_var(sum2) : DIV_ROW_LEN(sum2);
        const ACC_T inv = rsqrt(var_ + eps * xs * xs);
        (void)n;
#if SCALED_ROWS
#define RESULT_WB(x, wt, b) ((((x) * xs - cx) - cm) * inv * (wt) + (b))
#else
        /* v holds (x - cx) - cm (the second pass) */
#define RESULT_WB(x, wt, b) ((x) * inv * (wt) + (b))
#endif
#endif
#else
        /* WILD: the variance from the scaled sum (PHASE 2: the fold of M2 or moments' read of
         * the row), the mean from it (moments), deviations around 0 (layer_norm) */
#if PHASE == 2
        /* around r (the mean's estimate); sum2 is the row's M2 */
        const ACC_T shift = wild ? (ACC_T)0 : r;
        const ACC_T mean_d = wild ? (ACC_T)0 : mean_off;
        const ACC_T var_ = !isfinite(mean_est) ? (ACC_T)NAN : wild ? (ACC_T)INFINITY : var_clamped(sum2 / n);
#if NORM == NORM_MOMENTS
        const ACC_T wild_mean = isfinite(mean_est) && isfinite(mean_off) ? r + mean_off : mean_est;
#endif
#else
        /* shift is 0 in a WILD task (its rescue's) */
        const ACC_T mean_d = wild ? (ACC_T)0 : sum1 / n;
        const ACC_T var_ = wild ? wild_var(sum1) : var_of_sums(sum2 / n, mean_d);
#if NORM == NORM_MOMENTS
        const ACC_T wild_mean = sum1 / n * WILD_UNSCALE;
#endif
#endif
#if NORM == NORM_MOMENTS
        put_moments(stats, t, n_rows, lane, wild ? wild_mean : shift + mean_d, var_);
#else
        const ACC_T inv = rsqrt(var_ + eps * xs * xs);
#define RESULT_WB(x, wt, b) CENTRED_WB(x, wt, b)
#endif
#endif
#define RESULT(x, i) RESULT_WB((x), W(t.start + (i)), B(t.start + (i)))

#if FLAT_WRITE
        /* the row's write constants for PHASE 3 (rms_norm: no shift) */
        if (lane == 0 && t.len > 0 && t.start == 0) {
            __global ACC_T *wc = WRITE_CONSTANTS(t.row);
            wc[0] = xs;
#if NORM == NORM_RMS
            wc[1] = 0;
            wc[2] = 0;
#else
            wc[1] = shift;
            wc[2] = mean_d;
#endif
            wc[3] = inv;
        }
#elif NORM != NORM_MOMENTS
#if CACHE == CACHE_REG
#if PARAM_RUNS
        const int params_ok = params_aligned(weight, bias, t.start);
#endif
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_IN(j, t.len)) {
#if PARAM_RUNS
                APPLY_PARAM_RUN(v + j * VEC, t.start + RUN_START(j), params_ok);
#else
                UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                    v[j * VEC + e] = RESULT(v[j * VEC + e], RUN_START(j) + e);
                }
#endif
                store_run(v + j * VEC, q + RUN_START(j), vec_ok);
            }
        }
#elif CACHE == CACHE_LOCAL
        CACHE_WALK(i, x, STORE(RESULT(x, i), q, i));
#elif CPU_PASSES && NORM == NORM_RMS
        cpu_norm_write(p, q, t.len, weight, bias, t.start, xs, 0, 0, inv);
#elif CPU_PASSES
        cpu_norm_write(p, q, t.len, weight, bias, t.start, xs, shift, mean_d, inv);
#elif PARAM_RUNS
        /* one loop each way, so the walk's loop holds no branch on the params' alignment */
        if (params_aligned(weight, bias, t.start + w.head)) {
            LANE_WALK_RUNS(w, p, 1, q, d, APPLY_PARAM_RUN(d, t.start + i0_, 1), i, x, x = RESULT(x, i));
        } else {
            LANE_WALK(w, p, 1, q, i, x, x = RESULT(x, i));
        }
#else
        LANE_WALK(w, p, 1, q, i, x, x = RESULT(x, i));
#endif
#endif
#endif /* PHASE != 1 */
    }
}
#if ROW_RUNS_EXACT
#undef row_len
#endif
#endif /* PHASE 3 */
#if NORM == NORM_RMS
#undef x0
#endif
#undef PILOT
