/* row_scale.cl: per-row absmax scaling ("ReduceScale") and symmetric int8 quantisation.
 *
 * Teams, lanes and the row cache (CACHE 0 registers / 1 local memory / 2 none) work as in
 * softmax.cl. One reduce, amax = max|x| (NaN propagates), then one write:
 *   QUANT 0  absmax_scale  y = amax == 0 ? 0 : x / amax;           scales[row] = amax
 *   QUANT 1  quantize      y = rint(x / s) as char, s = amax / 127; scales[row] = s
 *            rint rounds half to even (the default rounding mode); where x / s is not
 *            finite (s == 0: a zero row; NaN or inf in the row) the value is 0.
 *
 * Split rows (SPLIT > 1): PHASE 1 writes each chunk's amax; PHASE 2 folds them, writes the
 * chunk, and the first chunk's team writes the scale.
 *
 * Entry:
 *   scale_rows(in, in_offset, out, out_offset, scales, partials, n_rows, row_len, chunk_len)
 * Launch as softmax.cl's softmax_rows; scales is (n_rows,) of ACC_T.
 *
 * Required macros: those of row_common.h, and QUANT.
 */

#ifndef QUANT
#error "QUANT (0 absmax_scale, 1 int8 quantize) is required"
#endif

#include "row_common.h"

#if QUANT
/* |y| <= 127 up to rounding; the clamp keeps a value of 127.00001 from wrapping */
inline int quantize(const ACC_T y) {
    return isfinite(y) ? (int)clamp(rint(y), (ACC_T)-127, (ACC_T)127) : 0;
}
#endif

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void scale_rows(__global const IN_T *restrict in, const ulong in_offset,
                __global OUT_T *restrict out, const ulong out_offset,
                __global ACC_T *restrict scales, __global ACC_T *restrict partials,
                const ulong n_rows, const ulong row_len, const ulong chunk_len)
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
#if PHASE != 1
        __global OUT_T *q = out + out_offset + row * row_len + start;
#endif

        ACC_T amax = 0;
#if PHASE == 2
        for (uint j = lane; j < SPLIT; j += LANES) {
            amax = comb(amax, PARTIAL(row, j, 0), K_MAX);
        }
#elif CACHE == CACHE_REG
        ACC_T v[NPER];
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            v[j] = i < len ? LOAD(p, i) : (ACC_T)0;
            amax = comb(amax, fabs(v[j]), K_MAX);
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
            amax = comb(amax, fabs(x), K_MAX);
        }
#endif
        amax = team_reduce(amax, K_MAX, scratch, lid, lane);
#if PHASE == 1
        if (lane == 0 && len > 0) {
            partials[2 * task] = amax;
            partials[2 * task + 1] = 0;
        }
#else
#if QUANT
        const ACC_T s = amax / (ACC_T)127;
#define RESULT(x) quantize((x) / s)
#else
        const ACC_T s = amax;
#define RESULT(x) (amax == (ACC_T)0 ? (ACC_T)0 : (x) / amax)
#endif
        if (lane == 0 && len > 0 && start == 0) {
            scales[row] = s;
        }

#if CACHE == CACHE_REG
        for (uint j = 0; j < NPER; ++j) {
            const ulong i = lane + (ulong)j * LANES;
            if (i < len) {
                STORE(RESULT(v[j]), q, i);
            }
        }
#elif CACHE == CACHE_LOCAL
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT(c[i]), q, i);
        }
#else
        for (ulong i = lane; i < len; i += LANES) {
            STORE(RESULT(LOAD(p, i)), q, i);
        }
#endif
#endif /* PHASE != 1 */
    }
}
