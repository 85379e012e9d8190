/* frexp_walk.h: the one copy of the serial walks' shared pieces -- the float product kept as
 * frexp's mantissa and an exponent of its own (reduce_rows.cl's rescued products, RESCUE_PROD;
 * row_scan.cl's PHASE 4 cumprod walk), and the written-out blocks of terms both files' walks
 * step through (reduce_rows.cl's RESCUE_BLOCK 256, sums and products; row_scan.cl's 32-term
 * blocks).
 *
 * The kernel files `#include "frexp_walk.h"` inside their float-only walk blocks;
 * clreduce/kernels.py splices the text in (as row_common.h), so the source hash and the
 * program caches see it and no include path is needed at build time.
 *
 * The product m * 2^e. Each term's mantissa (in [0.5, 1), or 0, inf, NaN) multiplies m and
 * its exponent adds to e (a long): no partial passes the float range, one rounding a term,
 * and a subnormal term keeps its bits (m * term would round them off; frexp gives a
 * subnormal's true exponent). An inf, NaN or 0 term still gives IEEE's result in m. m is
 * renormalised (FREXP_WALK_RENORM) every block of at most 32 terms, while it is still >= 2^-32;
 * the serial chain is one multiply a term, the terms' frexp are independent of each other.
 * The value m * 2^e (FREXP_WALK_VALUE) clamps the exponent to +-FREXP_WALK_EXP_LIMIT (2000)
 * before ldexp takes it as an int: past it every float type (double included) is inf or 0,
 * and m, in [2^-32, 1], cannot bring it back.
 *
 * Written out, not looped (WRITTEN_OUT_8 / WRITTEN_OUT_32): llvmpipe's loop limiter counts
 * loop trips (the planner's RUSTICL_LOOP_TRIPS budget), and OpenCL has no portable unroll
 * pragma (UNROLL_LOOP is empty there).
 *
 * Required macros: ACC_IS_FLOAT 1 (the walked values are float or double: frexp and ldexp).
 * Defines: FREXP_WALK_MUL(m, e, x), FREXP_WALK_RENORM(m, e), FREXP_WALK_EXP_LIMIT,
 * FREXP_WALK_VALUE(m, e), WRITTEN_OUT_8(M, k), WRITTEN_OUT_32(M, k).
 */
#ifndef FREXP_WALK_H
#define FREXP_WALK_H

#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (1: the walked values are float or double) is required"
#endif
#if ACC_IS_FLOAT != 1
#error "frexp_walk.h walks float or double values: ACC_IS_FLOAT must be 1"
#endif

/* m * 2^e times the term x: m (an ACC_T lvalue) times x's mantissa, e (a long lvalue) plus
 * x's exponent */
#define FREXP_WALK_MUL(m, e, x) do { int fw_dx_; (m) *= frexp((x), &fw_dx_); (e) += fw_dx_; } while (0)
/* m back into [0.5, 1) (or 0, inf, NaN), its exponent moved into e */
#define FREXP_WALK_RENORM(m, e) do { int fw_dm_; (m) = frexp((m), &fw_dm_); (e) += fw_dm_; } while (0)
/* |e| beyond which m * 2^e is inf or 0 in every float type */
#define FREXP_WALK_EXP_LIMIT 2000
/* m * 2^e as an ACC_T (e clamped to +-FREXP_WALK_EXP_LIMIT) */
#define FREXP_WALK_VALUE(m, e) \
    ldexp((m), (e) > FREXP_WALK_EXP_LIMIT ? FREXP_WALK_EXP_LIMIT : (e) < -FREXP_WALK_EXP_LIMIT ? -FREXP_WALK_EXP_LIMIT : (int)(e))

/* M(k) M(k + 1) ... : the terms k .. k + 7 (k + 31) of a block, written out */
#define WRITTEN_OUT_8(M, k) M(k) M((k) + 1) M((k) + 2) M((k) + 3) M((k) + 4) M((k) + 5) M((k) + 6) M((k) + 7)
#define WRITTEN_OUT_32(M, k) WRITTEN_OUT_8(M, k) WRITTEN_OUT_8(M, (k) + 8) WRITTEN_OUT_8(M, (k) + 16) \
                             WRITTEN_OUT_8(M, (k) + 24)

#endif /* FREXP_WALK_H */
