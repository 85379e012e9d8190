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

/* what a task's trip declares (row_common.h, TASK_START) */
#define ROW_WRITES (PHASE != 1)
#define ROW_WALKS (CACHE != 0)
#define ROW_VEC_STORES (QUANT == 0)
/* CPU_OWN_MATH (PoCL): ahead of row_common.h, whose helpers take it too */
#include "cpu_own_math.h"
#include "row_common.h"

#if QUANT
/* quantize's scale amax / 127, rounded to float32 before anything divides by it: the scale
 * returned is float32 (clreduce/rowops.py), and q is rint(x / that scale). float64 rows whose
 * amax / 127 passed float32's range (or fell below its least subnormal) had q from the
 * unrounded scale: q = 127 beside a returned scale of inf, or of 0 (an outside fuzz run,
 * 2026-11-29). Now the scale is inf or 0 there and q 0, as for any x / scale not finite. */
#if ACC_BYTES == 8
#define QUANT_SCALE(amax) ((ACC_T)(float)((amax) / (ACC_T)127))
#else
#define QUANT_SCALE(amax) ((amax) / (ACC_T)127)
#endif

/* |y| <= 127 up to rounding; the clamp keeps a value of 127.00001 from wrapping */
inline int quantize(const ACC_T y) {
    return isfinite(y) ? (int)clamp(rint(y), (ACC_T)-127, (ACC_T)127) : 0;
}
#endif

/* ---- CPU_PASSES (planner: PoCL; never CUDA) -------------------------------------------------
 * One work-item a task, which walks it twice in OpenCL vectors written with operators
 * (cpu_vec.h): max |x|, then the write (the second walk finds the row in the core's caches).
 * pip's PoCL 3.0 calls fabs, fmax, rint, clamp, isfinite and vloadn / vstoren out of line, and
 * the walks through them (WALK_RUNS, or element by element for absmax_scale) ran 1.9-4.4 GB/s
 * where torch with 2 threads ran 11-17 (absmax_scale, float32, this repository's 2-core host).
 * A split row's chunks (PHASE 1) give their max |x| as partials; PHASE 2 folds them and writes
 * its chunk the same way. */
#ifndef CPU_PASSES
#define CPU_PASSES 0
#endif
#if CPU_PASSES
#if LANES != 1 || CACHE != CACHE_NONE || VEC < 2
#error "CPU_PASSES needs LANES 1, CACHE 2 and VEC > 1"
#endif
#include "cpu_passes.h"

/* max |x| of `len` elements at p; NaN where one is (comb's rule). The running maxima drop a
 * NaN (its comparison is false), so the |x| are also added up: a sum of values >= 0 is NaN
 * only where one of them is. */
inline ACC_T cpu_absmax(__global const IN_T *p, const ulong len) {
    const ulong runs = len / VEC;
    CPU_ACCV mv = (CPU_ACCV)0, nv = (CPU_ACCV)0;
    for (ulong r = 0; r < runs; ++r) {
        const CPU_ACCV a = CPU_LOAD_ABS_ACC(p + r * VEC);
        mv = a > mv ? a : mv;
        nv += a;
    }
    ACC_T m = CPU_HMAX(mv), n = CPU_HSUM(nv);
    for (ulong i = runs * VEC; i < len; ++i) {
        const ACC_T a = fabs(LOAD(p, i));
        m = a > m ? a : m;
        n += a;
    }
    return n != n ? (ACC_T)NAN : m;
}

#if QUANT
/* quantize() of a vector of quotients x / s: clamped to [-127, 127] first (rint is monotonic
 * and the bounds are integers, so clamp(rint(y)) == rint(clamp(y))), then rounded half to even
 * by adding and taking off 1.5 * 2^23 (2^52 for doubles), whose ulp is 1; not finite -> 0 */
#if ACC_BYTES == 8
#define CPU_ROUND_MAGIC 0x1.8p52
#else
#define CPU_ROUND_MAGIC 0x1.8p23f
#endif
inline CPU_ACCV cpu_quantize(const CPU_ACCV y) {
    const CPU_ACCV c = y < (ACC_T)-127 ? (CPU_ACCV)(-127) : (y > (ACC_T)127 ? (CPU_ACCV)127 : y);
    const CPU_ACCV r = (c + CPU_ROUND_MAGIC) - CPU_ROUND_MAGIC;
    return y - y == (ACC_T)0 ? r : (CPU_ACCV)0;
}
#endif

/* the task's write: quantize(x / (amax / 127)) or amax == 0 ? 0 : x / amax (RESULT below) */
inline void cpu_scale_write(__global const IN_T *p, __global OUT_T *q, const ulong len, const ACC_T amax) {
    const ulong runs = len / VEC;
#if QUANT
    const ACC_T s = QUANT_SCALE(amax);
    for (ulong r = 0; r < runs; ++r) {
        CPU_STORE(cpu_quantize(CPU_LOAD_ACC(p + r * VEC) / s), q + r * VEC);
    }
    for (ulong i = runs * VEC; i < len; ++i) {
        STORE(quantize(LOAD(p, i) / s), q, i);
    }
#else
    if (amax == (ACC_T)0) {
        /* a row of zeros: +0 written. The zeros come from the row (x * 0 + 0, every x being
         * +-0), not a constant: Debian's PoCL (pthread-skylake) compiled a vstore_half8 of the
         * constant into a store that needs 16-byte alignment, and a float16 row starting 2006
         * bytes in killed the process */
        for (ulong r = 0; r < runs; ++r) {
            CPU_STORE(CPU_LOAD_ACC(p + r * VEC) * (ACC_T)0 + (ACC_T)0, q + r * VEC);
        }
    } else {
        for (ulong r = 0; r < runs; ++r) {
            CPU_STORE(CPU_LOAD_ACC(p + r * VEC) / amax, q + r * VEC);
        }
    }
    for (ulong i = runs * VEC; i < len; ++i) {
        STORE(amax == (ACC_T)0 ? (ACC_T)0 : LOAD(p, i) / amax, q, i);
    }
#endif
}
#endif /* CPU_PASSES */

#if WALK_RUNS && !HAS_VEC_MATH
#error "row_scale.cl's runs are written in vector built-ins: WALK_RUNS needs the OpenCL dialect"
#endif
#if WALK_RUNS
/* Rows read from memory, run by run in vector built-ins (fabs, fmax, rint, clamp): PoCL ran
 * them one scalar call per element, 0.2-0.3 GB/s for quantize_int8. */
#define VEC_T CAT(ACC_T, VEC)
/* max of m's lanes; NaN where n holds one (comb's rule) */
inline ACC_T vec_absmax(const VEC_T m, const VEC_T n) {
    ACC_T e[VEC];
    CAT(vstore, VEC)(m, 0, e);
    ACC_T r = e[0];
    for (uint k = 1; k < VEC; ++k) {
        r = fmax(r, e[k]);
    }
    return any(isnan(n)) ? (ACC_T)NAN : r;
}
/* max |x| of a run; NaN when the run holds one */
inline ACC_T run_absmax(const ACC_T *d) {
    const VEC_T a = fabs(CAT(vload, VEC)(0, d));
    return vec_absmax(a, a);
}
/* the running maxima of a run's |x| (m), and their running sum (n: NaN only where one is) */
#define RUN_ABSMAX_ADD(d, m, n) do {                                                          \
        const VEC_T a_ = fabs(CAT(vload, VEC)(0, (d)));                                       \
        (m) = fmax((m), a_);                                                                  \
        (n) += a_;                                                                            \
    } while (0)
#if QUANT
/* quantize() of a run of quotients x / s, in place */
inline void run_quantize(ACC_T *d, const ACC_T s) {
    const VEC_T y = CAT(vload, VEC)(0, d) / s;
    const VEC_T r = clamp(rint(y), (ACC_T)-127, (ACC_T)127);
    CAT(vstore, VEC)(select((VEC_T)0, r, isfinite(y)), 0, d);
}
#else
inline void run_scale(ACC_T *d, const ACC_T amax) {
    const VEC_T x = CAT(vload, VEC)(0, d);
    CAT(vstore, VEC)(amax == (ACC_T)0 ? (VEC_T)0 : x / amax, 0, d);
}
#endif
#endif

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void scale_rows(__global const IN_T *restrict in, const ulong in_offset,
                __global OUT_T *restrict out, const ulong out_offset,
                __global ACC_T *restrict scales, __global ACC_T *restrict partials,
                const ulong n_rows, const ulong row_len, const ulong chunk_len)
{
    ROW_KERNEL_START;

    for (ulong base = FIRST_BASE; base < n_rows * SPLIT; base += stride) {
        TASK_START(base);

        ACC_T amax = 0;
#if CPU_PASSES && PHASE != 2
        amax = cpu_absmax(p, t.len);
#elif PHASE == 2
        for (uint j = lane; j < SPLIT; j += LANES) {
            amax = comb(amax, PARTIAL(t.row, j, 0), K_MAX);
        }
#elif CACHE == CACHE_REG
        /* the lane's runs (row_common.h RUN_START; VEC 1 on GPUs: elements lane, lane +
         * LANES, ...), padded with 0, which no |x| exceeds */
        ACC_T v[NPER];
        load_runs(v, p, t.len, vec_ok, lane, (ACC_T)0);
        UNROLL_LOOP for (uint j = 0; j < NPER; ++j) {
            amax = comb(amax, fabs(v[j]), K_MAX);
        }
#elif WALK_RUNS && QUANT
        /* quantize: a vector of running maxima across the runs, reduced once, in place of a
         * horizontal max per run (run_absmax). fmax drops NaN, so the runs' |x| are also added
         * up: a sum of values >= 0 is NaN only where one of them is. PoCL's quantize_int8 ran
         * 1.3-1.8x faster; absmax_scale, whose write moves four times the bytes, was mixed
         * (rows of 64 20 % slower on pip's PoCL) and keeps run_absmax
         * (benchmarks/rowops_cpu_scale_walk_2026-11-28/ab_vec_absmax.txt). */
        VEC_T amax_v = (VEC_T)0, nan_v = (VEC_T)0;
        LANE_WALK_RUNS(w, p, 0, out, d, RUN_ABSMAX_ADD(d, amax_v, nan_v), i, x,
                       amax = comb(amax, fabs(x), K_MAX));
        amax = comb(amax, vec_absmax(amax_v, nan_v), K_MAX);
#elif WALK_RUNS
        LANE_WALK_RUNS(w, p, 0, out, d, amax = comb(amax, run_absmax(d), K_MAX), i, x,
                       amax = comb(amax, fabs(x), K_MAX));
#else
        LANE_WALK(w, p, 0, out, i, x, CACHE_PUT(i, x); amax = comb(amax, fabs(x), K_MAX));
#endif
        amax = team_reduce(amax, K_MAX, scratch, lid, lane);
#if PHASE == 1
        put_partials(partials, t, lane, amax, 0);
#else
#if QUANT
        const ACC_T s = QUANT_SCALE(amax);
#define RESULT(x) quantize((x) / s)
#else
        const ACC_T s = amax;
#define RESULT(x) (amax == (ACC_T)0 ? (ACC_T)0 : (x) / amax)
#endif
        if (lane == 0 && t.len > 0 && t.start == 0) {
            scales[t.row] = s;
        }

#if CACHE == CACHE_REG
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_START(j) < t.len) {
                UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                    v[j * VEC + e] = RESULT(v[j * VEC + e]);  /* int8 values are exact in ACC_T */
                }
                store_run(v + j * VEC, q + RUN_START(j), vec_ok);
            }
        }
#elif CACHE == CACHE_LOCAL
        CACHE_WALK(i, x, STORE(RESULT(x), q, i));
#elif CPU_PASSES
        cpu_scale_write(p, q, t.len, amax);
#elif WALK_RUNS && QUANT
        LANE_WALK_RUNS(w, p, 1, q, d, run_quantize(d, s), i, x, x = RESULT(x));
#elif WALK_RUNS
        LANE_WALK_RUNS(w, p, 1, q, d, run_scale(d, amax), i, x, x = RESULT(x));
#else
        LANE_WALK(w, p, 1, q, i, x, x = RESULT(x));
#endif
#endif /* PHASE != 1 */
    }
}
