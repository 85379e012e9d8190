/* softmax.cl: softmax / log_softmax of each contiguous row of a (rows, row_len) array.
 *
 * Teams of LANES work-items own one task each (a row, or a chunk of one: row_common.h) and
 * walk the tasks with a grid stride. A lane owns the elements lane, lane + LANES, ... of its
 * task, so neighbouring lanes read neighbouring addresses. CACHE picks where a lane keeps its
 * elements between the passes of a whole row (PHASE 0):
 *   CACHE 0  registers: a private array of NPER floats (row read once), loaded in runs of
 *            VEC consecutive elements (row_common.h, RUN_START)
 *   CACHE 1  local memory: LOCAL_LEN floats per team (row read once); a lane reads back
 *            only what it wrote itself, so the row buffer needs no barrier
 *   CACHE 2  none: two reads of the row from global memory, the first for the max and the
 *            sum at once (an online max, as split rows' PHASE 1), the second for the write
 * Math is in ACC_T (float for half input); the shift follows scipy.special:
 *   softmax      y = exp(x - m) / sum(exp(x - m)),      m = max(x)   (NaN propagates)
 *   log_softmax  y = (x - s) - log(sum(exp(x - s))),    s = m if finite else 0
 * so a row holding NaN or +inf, or only -inf, gives NaN (log_softmax: see README).
 *
 * Split rows (SPLIT > 1, few long rows): PHASE 1 writes each chunk's (m_c, s_c), its max and
 * sum(exp(x - shift_c)) with shift_c = m_c if finite else 0, from one read (an online max:
 * the sum is rescaled when the max grows); PHASE 2 folds a row's pairs into (m, s) with the
 * same shift rule and writes the chunk. Both give the PHASE 0 values up to rounding, the
 * non-finite rows included.
 *
 * Entry:
 *   softmax_rows(in, in_offset, out, out_offset, partials, n_rows, row_len, chunk_len)
 * 1-D launch, local size WG_SIZE, any multiple of it as global size (grid stride over
 * n_rows * SPLIT tasks). Offsets and lengths in elements; chunk_len = row_len with SPLIT 1.
 * out is (n_rows, row_len) of OUT_T (unused in PHASE 1); partials is (n_rows * SPLIT, 2) of
 * ACC_T (unused with SPLIT 1).
 *
 * Required macros: those of row_common.h, and LOG (0 softmax, 1 log_softmax).
 */

#ifndef LOG
#error "LOG (0 softmax, 1 log_softmax) is required"
#endif

/* what a task's trip declares (row_common.h, TASK_START) */
#define ROW_WRITES (PHASE != 1)
#define ROW_WALKS (CACHE != 0)
/* 16-byte stores on CUDA: float16 648720 x 128 went from 2592-2610 to 2745-2766 GB/s on an H100 */
#define ROW_WIDE_STORES 1
/* CPU_OWN_MATH (PoCL): ahead of row_common.h, whose helpers take it too */
#include "cpu_own_math.h"
#include "row_common.h"

/* exp of a row's terms. Where the results are rounded to float16, the dialect's HALF_EXP (on
 * CUDA __expf, ~4e-7 + |x| * 6e-8 relative, where half rounds at 4.9e-4): each term of the sum
 * carries its own relative error, so the sum and log_softmax's log of it keep the same bound.
 * The rescales of a running sum (a new max) keep exp. */
#if OUT_HALF
#define EXP_TERM(x) HALF_EXP(x)
#else
#define EXP_TERM(x) exp(x)
#endif

/* SELECT_MAX (planner: CPU runtimes, rows in registers; default 0): the row's max by compare
 * and select, which drops a NaN as fmax does (m never is one). PoCL 3.0 from pip calls fmax out
 * of line (cpu_vec.h); on this AMD host, float32 62500 x 128, device arrays, ms a call: Intel's
 * runtime 12.2-12.7 -> 10.3-10.4, pip PoCL 20-27 -> 18-19. GPUs keep fmax: one instruction. */
#ifndef SELECT_MAX
#define SELECT_MAX 0
#endif
#if SELECT_MAX
#define ROW_MAX(m, x) ((x) > (m) ? (x) : (m))
#else
#define ROW_MAX(m, x) fmax((m), (x))
#endif

/* shift of a max: itself when finite, else 0 (log_softmax's rule; the partial sums use it) */
inline ACC_T finite_or_zero(const ACC_T m) { return isfinite(m) ? m : (ACC_T)0; }

#if PHASE == 1 || (PHASE == 0 && CACHE == CACHE_NONE)
#define ONLINE 1  /* max and sum from one read of the row (or chunk) */
#else
#define ONLINE 0
#endif

#if ONLINE
/* One element into a lane's (max m, compensated sum (s, c) of exp(x - shift(m))). -inf adds
 * nothing; a new max rescales the sum (to 0 when the old max was -inf, or the new is +inf,
 * whose sum then is exp(+inf) = inf); a NaN becomes the max and the sum. */
inline void online_add(ACC_T *m, ACC_T *s, ACC_T *c, const ACC_T x) {
    if (isnan(x) || x > *m) {
        const ACC_T r = isfinite(*m) && isfinite(x) ? exp(*m - x) : (ACC_T)0;
        *s *= r;
        *c *= r;
        *m = x;
    }
    if (x != (ACC_T)(-INFINITY)) {
        nsum_add(s, c, EXP_TERM(x - finite_or_zero(*m)));
    }
}
#endif

#if CACHE == CACHE_REG || WALK_RUNS
/* exp(d[e] - shift) of one run of VEC elements, kept in d when `keep`; returns the
 * run's sum. Where the dialect has vector math (OpenCL), one VEC-wide exp: CPU runtimes then
 * call their vectorised exp where an exp per element ran one element at a time (softmax of
 * rows of 128 float32, this AMD host, kernel alone: PoCL 0.78 -> 3.2 GB/s, Intel's runtime
 * 2.5 -> 6.1); GPUs split the vector into the same per-element instructions. */
inline ACC_T exp_run(ACC_T *d, const ACC_T shift, const int keep) {
    ACC_T e[VEC];
#if HAS_VEC_MATH && VEC > 1
    CAT(vstore, VEC)(EXP_TERM(CAT(vload, VEC)(0, d) - shift), 0, e);
#else
    UNROLL_LOOP for (uint k = 0; k < VEC; ++k) {
        e[k] = EXP_TERM(d[k] - shift);
    }
#endif
    ACC_T s = 0;
    UNROLL_LOOP for (uint k = 0; k < VEC; ++k) {
        s += e[k];
        if (keep) {
            d[k] = e[k];
        }
    }
    return s;
}
#endif

#if WALK_RUNS
/* One run of VEC elements into (m, s, c) as online_add would take them one by one: the
 * run's max first (NaN wins), one rescale, then exp_run (one VEC-wide exp on OpenCL) and a
 * compensated add of the run's sum. PoCL's exp ran 91 M elements/s on scalars and 621 M on
 * float16 vectors (this 2-core AMD host), and the element walk left its softmax of long rows
 * at 0.2 GB/s. On CUDA (scalar exps) the saving is the per-element branch, rescale and
 * compensation of online_add. */
inline void online_add_run(ACC_T *m, ACC_T *s, ACC_T *c, ACC_T *d) {  /* d: read only (exp_run keep 0) */
    ACC_T rm = d[0];
    for (uint k = 1; k < VEC; ++k) {
        rm = comb(rm, d[k], K_MAX);
    }
    if (isnan(rm) || rm > *m) {
        const ACC_T r = isfinite(*m) && isfinite(rm) ? exp(*m - rm) : (ACC_T)0;
        *s *= r;
        *c *= r;
        *m = rm;
    }
    /* -inf elements give exp(-inf) = 0: nothing, as in online_add */
    nsum_add(s, c, exp_run(d, finite_or_zero(*m), 0));
}

/* The write of a run: exp(x - shift) * inv, in place (one VEC-wide exp where the dialect
 * has vector math) */
inline void exp_scale_run(ACC_T *d, const ACC_T shift, const ACC_T inv) {
    exp_run(d, shift, 1);
    UNROLL_LOOP for (uint k = 0; k < VEC; ++k) {
        d[k] *= inv;
    }
}
#endif

/* ---- CPU_PASSES (planner: CPU runtimes; never CUDA) ------------------------------------- */
/* One work-item a task, which walks it in OpenCL vectors. A whole row (PHASE 0): its max;
 * then exp(x - shift), summed and (float32 / float64 softmax) stored to the output; then the
 * output scaled in place, or (float16) the terms kept as floats in a private array and scaled
 * from there (CPU_HALF_TERMS; past it exp(x - shift) / sum written from the input: a stored
 * half term would be rounded twice), or (x - shift) - log(sum) written (log_softmax). A chunk
 * of a split row (PHASE 1): its max, then the sum of exp(x - shift_c), its partials (m_c, s_c)
 * as the online walk gives them; PHASE 2 folds them as ever and writes exp(x - m) / s
 * (log_softmax: as above) in vectors. A row, or a chunk, stays in the core's caches between
 * its walks, so memory sees one read and one write (split: two reads), and each exp is taken
 * once (float16 softmax rows past CPU_HALF_TERMS: twice). The register row it replaces (CACHE 0: a private array of
 * NPER floats) lives in memory on PoCL and Intel's runtime, and its loads, sums and stores
 * cost 3-4x a copy (float32 62500 x 128, README); the online walk of longer rows paid a scalar
 * exp a run. Vector types are plain OpenCL C: the planner sets CPU_PASSES only for OpenCL CPU
 * plans. */
#ifndef CPU_PASSES
#define CPU_PASSES 0
#endif
#if CPU_PASSES
#if LANES != 1 || CACHE != CACHE_NONE || IN_HALF != OUT_HALF || VEC < 2
#error "CPU_PASSES needs LANES 1, CACHE 2, VEC > 1 and the output's dtype the input's"
#endif
/* vector loads spelled with operators: PoCL 3.0 from pip calls vloadn / vstoren out of line
 * (cpu_vec.h); the same row walks with vload8 / vstore8 took 1.3-1.6x as long there. RAW_T
 * is the output's type too (softmax keeps the dtype). */
#include "cpu_passes.h"

/* CPU_OWN_EXP (planner: PoCL; default 0): the exp of float vectors is cpu_vec.h's cpu_exp,
 * written with operators, in place of the built-in, which PoCL 3.0 from pip calls out of line,
 * spilling the sum's vectors around each call. float64 keeps exp. */
#ifndef CPU_OWN_EXP
#define CPU_OWN_EXP 0
#endif
#if ACC_BYTES == 8 || !CPU_OWN_EXP
#define CPU_EXP(v) exp(v)
#define CPU_ROW_LOG(x) log(x)
#else
#define CPU_EXP(v) cpu_exp(v)
/* log_softmax's one log a row, with operators too: pip's PoCL called log out of line for
 * every row (its finite test: CPU_OWN_MATH) */
#define CPU_ROW_LOG(x) (cpu_log((CPU_V(float))(x)).s0)
#endif

/* The max of `len` elements at p, by compare and select: a NaN is dropped (as SELECT_MAX) and
 * reaches every result through the sum instead. */
inline ACC_T cpu_max(__global const IN_T *p, const ulong len) {
    const ulong runs = len / VEC;
    CPU_ACCV mv = (CPU_ACCV)(-INFINITY);
    for (ulong r = 0; r < runs; ++r) {
        const CPU_ACCV x = CPU_LOAD_ACC(p + r * VEC);
        mv = x > mv ? x : mv;
    }
    ACC_T m = CPU_HMAX(mv);
    for (ulong i = runs * VEC; i < len; ++i) {
        const ACC_T x = LOAD(p, i);
        m = x > m ? x : m;
    }
    return m;
}

/* CPU_HALF_TERMS (planner: float16 softmax rows of at most that many elements on PoCL and
 * Intel's CPU runtime; default 0): the row's exp terms stay as floats in a private array between the sum and the write, so
 * each exp is taken once and each result rounded to half once. Without it a float16 row takes
 * every exp twice (terms stored to the output as halves and scaled there would be rounded
 * twice). A multiple of VEC: the array holds whole runs (a row's last len % VEC terms are taken
 * again in the write). */
#ifndef CPU_HALF_TERMS
#define CPU_HALF_TERMS 0
#endif
#if CPU_HALF_TERMS && (LOG || !OUT_HALF || CPU_HALF_TERMS % VEC)
#error "CPU_HALF_TERMS: float16 softmax, a multiple of VEC"
#endif

/* The exp terms of runs [r0, r1) at p (stored to q where `store`; kept as floats in kept[r]
 * where kept is not 0), added plainly in each lane */
inline CPU_ACCV cpu_exp_block(__global const IN_T *p, __global OUT_T *q, CPU_ACCV *kept, const ulong r0,
                              const ulong r1, const ACC_T shift, const int store) {
    CPU_ACCV bv = (CPU_ACCV)0;
    for (ulong r = r0; r < r1; ++r) {
        const CPU_ACCV e = CPU_EXP(CPU_LOAD_ACC(p + r * VEC) - shift);
        bv += e;
        if (store) {
            CPU_STORE(e, q + r * VEC);
        }
        if (kept) {
            kept[r] = e;
        }
    }
    return bv;
}

/* The sum of exp(x - shift) over `len` elements at p, each term also stored to q where
 * `store`. In each vector lane CPU_BLOCK_RUNS runs are added plainly (terms in [0, 1]: within
 * ~CPU_BLOCK_RUNS ulp of the block's sum), then one Neumaier-compensated step (terms and sums
 * are >= 0, so the larger magnitude is the larger value), and the tail compensated too: a row
 * of 4096 keeps the accuracy of the walked rows. A compensated step a run had been 8 of the
 * loop's ~45 instructions a run on pip's PoCL, which runs this walk instruction-bound. */
inline ACC_T cpu_exp_sum(__global const IN_T *p, __global OUT_T *q, CPU_ACCV *kept, const ulong len,
                         const ACC_T shift, const int store) {
    const ulong runs = len / VEC, blocks = runs / CPU_BLOCK_RUNS;
    CPU_ACCV sv = (CPU_ACCV)0, cv = (CPU_ACCV)0;
    for (ulong b = 0; b < blocks; ++b) {
        const CPU_ACCV bv = cpu_exp_block(p, q, kept, b * CPU_BLOCK_RUNS, (b + 1) * CPU_BLOCK_RUNS, shift, store);
        CPU_NSUM_ADD_POS(sv, cv, bv);
    }
    if (blocks * CPU_BLOCK_RUNS < runs) {  /* the runs past the last whole block: a shorter block */
        const CPU_ACCV bv = cpu_exp_block(p, q, kept, blocks * CPU_BLOCK_RUNS, runs, shift, store);
        CPU_NSUM_ADD_POS(sv, cv, bv);
    }
    /* each lane's compensated value, the lanes then added plainly (VEC terms, pairwise) */
    const CPU_ACCV lanes_sum = CPU_NSUM_VALUE(sv, cv);
    ACC_T s = CPU_HSUM(lanes_sum), comp = 0;
    for (ulong i = runs * VEC; i < len; ++i) {
        const ACC_T e = exp(LOAD(p, i) - shift);
        nsum_add(&s, &comp, e);
        if (store) {
            STORE(e, q, i);
        }
    }
    return nsum_value(s, comp);
}

/* The write of `len` elements at q: log_softmax (x - shift) - a from the input; softmax
 * exp(x - shift) * b from the input (split rows), or, where the terms are already in q
 * (`in_place`), q * b. The branch stands outside the loops: as a select per run, PoCL ran
 * both sides (an exp, and a read of the output, per element). */
inline void cpu_write(__global const IN_T *p, __global OUT_T *q, const ulong len, const ACC_T shift,
                      const ACC_T a, const ACC_T b, const int in_place) {
    const ulong runs = len / VEC;
#if LOG
    for (ulong r = 0; r < runs; ++r) {
        CPU_STORE((CPU_LOAD_ACC(p + r * VEC) - shift) - a, q + r * VEC);
    }
    for (ulong i = runs * VEC; i < len; ++i) {
        STORE((LOAD(p, i) - shift) - a, q, i);
    }
#else
#if OUT_HALF
    (void)in_place;  /* float16 terms are never stored before the write: see cpu_pass_row */
#else
    if (in_place) {
        for (ulong r = 0; r < runs; ++r) {
            CPU_STORE(CPU_LOAD(q + r * VEC) * b, q + r * VEC);
        }
        for (ulong i = runs * VEC; i < len; ++i) {
            q[i] *= b;
        }
        return;
    }
#endif
    for (ulong r = 0; r < runs; ++r) {
        CPU_STORE(CPU_EXP(CPU_LOAD_ACC(p + r * VEC) - shift) * b, q + r * VEC);
    }
    for (ulong i = runs * VEC; i < len; ++i) {
        STORE(exp(LOAD(p, i) - shift) * b, q, i);
    }
#endif
}

/* A whole row (PHASE 0). softmax's shift is the max itself (a non-finite max makes the row
 * NaN, as in the register rows); log_softmax's is finite_or_zero(max). */
inline void cpu_pass_row(__global const IN_T *p, __global OUT_T *q, const ulong len) {
    const ACC_T m = cpu_max(p, len);
#if LOG
    const ACC_T shift = finite_or_zero(m);
    cpu_write(p, q, len, shift, CPU_ROW_LOG(cpu_exp_sum(p, q, 0, len, shift, 0)), 0, 0);
#else
    /* one reciprocal per row, as the register rows. float16: the terms stay floats in `kept`
     * (CPU_HALF_TERMS); rows past it take each exp again in the write (terms stored as halves
     * and scaled later would be rounded twice) */
#if CPU_HALF_TERMS
    if (len <= CPU_HALF_TERMS) {
        CPU_ACCV kept[CPU_HALF_TERMS / VEC];
        const ACC_T inv_k = (ACC_T)1 / cpu_exp_sum(p, q, kept, len, m, 0);
        const ulong runs = len / VEC;
        for (ulong r = 0; r < runs; ++r) {
            CPU_STORE(kept[r] * inv_k, q + r * VEC);
        }
        for (ulong i = runs * VEC; i < len; ++i) {
            STORE(exp(LOAD(p, i) - m) * inv_k, q, i);
        }
        return;
    }
#endif
    const ACC_T inv_s = (ACC_T)1 / cpu_exp_sum(p, q, 0, len, m, !OUT_HALF);
    cpu_write(p, q, len, m, 0, inv_s, !OUT_HALF);
#endif
}
#endif /* CPU_PASSES */

/* A (max, sum) pair of one lane or chunk, re-based onto the shift of the team's max. */
inline ACC_T rebased(const ACC_T s, const ACC_T m, const ACC_T shift) {
    return s == (ACC_T)0 ? (ACC_T)0 : s * exp(finite_or_zero(m) - shift);
}

__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE)
void softmax_rows(__global const IN_T *restrict in, const ulong in_offset,
                  __global OUT_T *restrict out, const ulong out_offset,
                  __global ACC_T *restrict partials,
                  const ulong n_rows, const ulong row_len, const ulong chunk_len)
{
    ROW_KERNEL_START;

    for (ulong base = FIRST_BASE; base < n_rows * SPLIT; base += stride) {
        TASK_START(base);
#if CPU_PASSES && PHASE == 0
        cpu_pass_row(p, q, t.len);
#elif CPU_PASSES && PHASE == 1
        const ACC_T m = cpu_max(p, t.len);
        put_partials(partials, t, lane, m, cpu_exp_sum(p, 0, 0, t.len, finite_or_zero(m), 0));
#else

#if ONLINE
        /* each lane's (max, sum of exp(x - shift(max))), then the team's */
        ACC_T lm = -INFINITY, ls_ = 0, comp = 0;
#if WALK_RUNS
        LANE_WALK_RUNS(w, p, 0, out, d, online_add_run(&lm, &ls_, &comp, d), i, x, online_add(&lm, &ls_, &comp, x));
#else
        LANE_WALK(w, p, 0, out, i, x, online_add(&lm, &ls_, &comp, x));
#endif
        ACC_T m = team_reduce(lm, K_MAX, scratch, lid, lane);
        ACC_T s = team_reduce(rebased(nsum_value(ls_, comp), lm, finite_or_zero(m)), K_SUM, scratch, lid, lane);
#endif
#if PHASE == 1
        put_partials(partials, t, lane, m, s);
#else
#if ONLINE
#if LOG
        const ACC_T shift = finite_or_zero(m);
#endif
#elif PHASE == 2
        ACC_T m = -INFINITY;
        for (uint j = lane; j < SPLIT; j += LANES) {
            m = comb(m, PARTIAL(t.row, j, 0), K_MAX);
        }
        m = team_reduce(m, K_MAX, scratch, lid, lane);
        const ACC_T shift = finite_or_zero(m);
        ACC_T s = 0, comp = 0;
        for (uint j = lane; j < SPLIT; j += LANES) {
            nsum_add(&s, &comp, rebased(PARTIAL(t.row, j, 1), PARTIAL(t.row, j, 0), shift));
        }
        s = team_reduce(nsum_value(s, comp), K_SUM, scratch, lid, lane);
#else  /* PHASE 0: the whole row */
        ACC_T m = -INFINITY;
#if CACHE == CACHE_REG
        ACC_T v[NPER];
        load_runs(v, p, t.len, vec_ok, lane, (ACC_T)(-INFINITY));
        /* fmax drops a NaN where comb keeps it, one instruction an element instead of four
         * (float16 rows of 16384 on an H100 were issue-bound): the NaN still reaches every
         * result through the sum of exp(x - shift) below, as through a NaN max */
        UNROLL_LOOP for (uint j = 0; j < NPER; ++j) {
            m = ROW_MAX(m, v[j]);
        }
#elif CACHE == CACHE_LOCAL
        LANE_WALK(w, p, 0, out, i, x, CACHE_PUT(i, x); m = comb(m, x, K_MAX));
#endif
        m = team_reduce(m, K_MAX, scratch, lid, lane);
#if LOG
        const ACC_T shift = finite_or_zero(m);
#else
        const ACC_T shift = m;
#endif

        ACC_T s = 0, comp = 0;
/* softmax keeps exp(x - shift) in the cache, so each element's exp is computed once */
#if CACHE == CACHE_REG
        /* at most NPER terms per lane (32 floats): a plain sum is accurate to ~NPER ulp, and
         * the compensation's extra flops per element made an H100 compute-bound here */
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_START(j) < t.len) {
                RUN_SUM_ADD(s, comp, exp_run(v + j * VEC, shift, !LOG));
            }
        }
#elif CACHE == CACHE_LOCAL
        for (ulong i = lane; i < t.len; i += LANES) {
            const ACC_T e = EXP_TERM(c[i] - shift);
            nsum_add(&s, &comp, e);
#if !LOG
            c[i] = e;
#endif
        }
#endif
        s = team_reduce(nsum_value(s, comp), K_SUM, scratch, lid, lane);
#endif /* PHASE 0, cached */

#if LOG
        const ACC_T ls = log(s);
#define RESULT(x) (((x) - shift) - ls)
#define RESULT_CACHED(x) RESULT(x)
#elif ONLINE || PHASE == 2
        /* a non-finite max (NaN, +inf, all -inf) makes the whole row NaN, as exp(x - m) does
         * in the cached variants */
        const ACC_T m_ = isfinite(m) ? m : (ACC_T)NAN;
        const ACC_T inv_s = (ACC_T)1 / s;  /* one reciprocal per row, as the cached rows below */
#define RESULT(x) (EXP_TERM((x) - m_) * inv_s)
#else
#define RESULT(x) (EXP_TERM((x) - shift) / s)
        /* one reciprocal per row: a float division per element is a dozen instructions on
         * NVIDIA GPUs and made float16 rows of 128 compute-bound (adds < 1 ulp) */
        const ACC_T inv_s = (ACC_T)1 / s;
#define RESULT_CACHED(e) ((e) * inv_s)
#endif

#if CACHE == CACHE_REG
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            if (RUN_START(j) < t.len) {
                UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                    v[j * VEC + e] = RESULT_CACHED(v[j * VEC + e]);
                }
                store_run(v + j * VEC, q + RUN_START(j), vec_ok);
            }
        }
#elif CACHE == CACHE_LOCAL
        CACHE_WALK(i, x, STORE(RESULT_CACHED(x), q, i));
#elif CPU_PASSES && LOG  /* PHASE 2 */
        cpu_write(p, q, t.len, shift, ls, 0, 0);
#elif CPU_PASSES
        cpu_write(p, q, t.len, m_, 0, inv_s, 0);
#elif WALK_RUNS && !LOG
        /* exp(x - m_) / s run by run */
        LANE_WALK_RUNS(w, p, 1, q, d, exp_scale_run(d, m_, inv_s), i, x, x = RESULT(x));
#else
        LANE_WALK(w, p, 1, q, i, x, x = RESULT(x));
#endif
#endif /* PHASE != 1 */
#endif /* CPU_PASSES, PHASE 0 and 1 */
    }
}
