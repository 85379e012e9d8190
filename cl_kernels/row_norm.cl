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
 * Split rows (SPLIT > 1): PHASE 1 writes each chunk's sums of d and d*d (x0 stays the row's
 * first element, so the sums of a row's chunks add up); PHASE 2 folds them and writes the
 * chunk (moments: the first chunk's team writes the statistics).
 *
 * Entry:
 *   norm_rows(in, in_offset, out, out_offset, weight, bias, stats, partials,
 *             n_rows, row_len, chunk_len, eps)
 * Launch as softmax.cl's softmax_rows. stats is (2, n_rows) of ACC_T (moments only);
 * weight and bias may be any buffer when HAS_WEIGHT / HAS_BIAS is 0.
 *
 * Required macros: those of row_common.h, and NORM, HAS_WEIGHT, HAS_BIAS.
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

#include "row_common.h"

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

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void norm_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               __global const ACC_T *restrict weight, __global const ACC_T *restrict bias,
               __global ACC_T *restrict stats, __global ACC_T *restrict partials,
               const ulong n_rows, const ulong row_len, const ulong chunk_len, const ACC_T eps)
{
    __local ACC_T scratch[SCRATCH_LEN];
#if CACHE == CACHE_LOCAL
    __local ACC_T rowbuf[TEAMS * LOCAL_LEN];
#endif
    const uint lid = (uint)get_local_id(0);
    const uint lane = LANE_ID();
    const uint team = TEAM_ID();
    const ulong stride = (ulong)get_num_groups(0) * TEAMS;

    /* every work-item runs the same trips; a team past the last task works on an empty chunk */
    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_rows * SPLIT; base += stride) {
        const ulong task = base + team;
        ulong row, start;
        const ulong len = task_len(task, n_rows, row_len, chunk_len, &row, &start);
        __global const IN_T *p = in + in_offset + row * row_len + start;
#if PHASE != 1 && NORM != NORM_MOMENTS
        __global OUT_T *q = out + out_offset + row * row_len + start;
#endif

#if NORM == NORM_RMS
#define x0 ((ACC_T)0) /* no shift (a macro: a variable no phase reads is a -Werror warning) */
#else
        /* the row's first element, for every chunk of the row */
        const ACC_T x0 = len > 0 ? LOAD(in + in_offset + row * row_len, 0) : (ACC_T)0;
#endif
#if PHASE == 2
        /* fold the row's chunk sums */
        ACC_T s1 = 0, c1 = 0, s2 = 0, c2 = 0;
        for (uint j = lane; j < SPLIT; j += LANES) {
            nsum_add(&s1, &c1, PARTIAL(row, j, 0));
            nsum_add(&s2, &c2, PARTIAL(row, j, 1));
        }
#else
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
#endif
        const ACC_T sum2 = team_reduce(nsum_value(s2, c2), K_SUM, scratch, lid, lane);
#if NORM != NORM_RMS || PHASE == 1
        const ACC_T sum1 = team_reduce(nsum_value(s1, c1), K_SUM, scratch, lid, lane);
#endif

#if PHASE == 1
        if (lane == 0 && len > 0) {
            partials[2 * task] = sum1;
            partials[2 * task + 1] = sum2;
        }
#else
        const ACC_T n = (ACC_T)row_len;
#if NORM == NORM_RMS
        const ACC_T inv = rsqrt(sum2 / n + eps);
#define RESULT(x, i) ((x) * inv * W(start + (i)))
#else
        const ACC_T mean_d = sum1 / n;
        /* clamp rounding below zero; fmax would also turn a NaN variance into 0, so NaN
         * (a NaN or inf in the row) is carried past it */
        const ACC_T var_d = sum2 / n - mean_d * mean_d;
        const ACC_T var_ = isnan(var_d) ? var_d : fmax(var_d, (ACC_T)0);
#if NORM == NORM_MOMENTS
        if (lane == 0 && len > 0 && start == 0) {
            stats[row] = x0 + mean_d;
            stats[n_rows + row] = var_;
        }
#else
        const ACC_T inv = rsqrt(var_ + eps);
/* (x - x0) - mean_d: both differences are small next to x, so a large mean cancels exactly */
#define RESULT(x, i) ((((x) - x0) - mean_d) * inv * W(start + (i)) + B(start + (i)))
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
#endif /* PHASE != 1 */
    }
}
#if NORM == NORM_RMS
#undef x0
#endif
