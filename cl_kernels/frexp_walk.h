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
 * The value m * 2^e (FREXP_WALK_VALUE: ldexp on CUDA, powers of two built from bits on
 * OpenCL, frexp_walk_value) clamps e to +-FREXP_WALK_EXP_LIMIT (2000): past it every float
 * type (double included) is inf or 0, and m, in [2^-32, 1], cannot bring it back.
 *
 * Written out, not looped (WRITTEN_OUT_8 / WRITTEN_OUT_32): llvmpipe's loop limiter counts
 * loop trips (the planner's RUSTICL_LOOP_TRIPS budget), and OpenCL has no portable unroll
 * pragma (UNROLL_LOOP is empty there).
 *
 * Required macros: ACC_IS_FLOAT 1 (the walked values are float or double: frexp), ACC_BYTES
 * (4 or 8) and ACC_T; HAS_LDEXP_EVERYWHERE (the dialect's; default 0).
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
#if !defined(ACC_BYTES) || (ACC_BYTES != 4 && ACC_BYTES != 8)
#error "ACC_BYTES (4: float, 8: double) is required"
#endif

/* m * 2^e times the term x: m (an ACC_T lvalue) times x's mantissa, e (a long lvalue) plus
 * x's exponent */
#define FREXP_WALK_MUL(m, e, x) do { int fw_dx_; (m) *= frexp((x), &fw_dx_); (e) += fw_dx_; } while (0)
/* m back into [0.5, 1) (or 0, inf, NaN), its exponent moved into e */
#define FREXP_WALK_RENORM(m, e) do { int fw_dm_; (m) = frexp((m), &fw_dm_); (e) += fw_dm_; } while (0)
/* |e| beyond which m * 2^e is inf or 0 in every float type */
#define FREXP_WALK_EXP_LIMIT 2000
/* e clamped to +-FREXP_WALK_EXP_LIMIT (an int's range, whatever e's type) */
#define FREXP_WALK_CLAMP(e) \
    ((e) > FREXP_WALK_EXP_LIMIT ? FREXP_WALK_EXP_LIMIT : (e) < -FREXP_WALK_EXP_LIMIT ? -FREXP_WALK_EXP_LIMIT : (int)(e))

#ifndef HAS_LDEXP_EVERYWHERE
#define HAS_LDEXP_EVERYWHERE 0
#endif
#if HAS_LDEXP_EVERYWHERE
/* m * 2^e as an ACC_T (e clamped to +-FREXP_WALK_EXP_LIMIT, ldexp's int) */
#define FREXP_WALK_VALUE(m, e) ldexp((m), FREXP_WALK_CLAMP(e))
#else
/* m * 2^e as an ACC_T, without ldexp (the dialect's HAS_LDEXP_EVERYWHERE 0: OpenCL): Intel's
 * CPU runtime (2026.2) on a host without AVX-512 has no ldexp for 32 or 64 floats at once, so
 * every kernel calling it at a sub-group width of 32 or 64 failed to link ("JIT session
 * error: Symbols not found: [ _Z5ldexpDv64_fDv64_iS_ ]"), and the rescued products could not
 * run there. Instead m is
 * multiplied by powers of two that are themselves normal numbers (FW_POW2, made from their
 * bits), rounding once: a positive e in up to three factors (m can only grow, so an
 * overflow on the way is the true inf); a negative one in one factor, or where 2^e is below
 * the normal range, in two whose first keeps m * 2^(e - FW_EMIN) normal (m >= 2^-32, see
 * above) so that only the last one rounds. Below 2 * FW_EMIN the value is under half the
 * smallest subnormal for such m: 0 (inf and NaN stay themselves). */
#if ACC_BYTES == 8
#define FW_EMAX 1023
#define FW_EMIN (-1022)
#define FW_POW2(k) as_double((ulong)((k) + 1023) << 52)
#else
#define FW_EMAX 127
#define FW_EMIN (-126)
#define FW_POW2(k) as_float((uint)((k) + 127) << 23)
#endif
inline ACC_T frexp_walk_value(const ACC_T m, int e) {
    if (e >= 0) {
        e = e > 3 * FW_EMAX ? 3 * FW_EMAX : e;
        const int a = e > FW_EMAX ? FW_EMAX : e;
        e -= a;
        const int b = e > FW_EMAX ? FW_EMAX : e;
        return m * FW_POW2(a) * FW_POW2(b) * FW_POW2(e - b);
    }
    if (e >= FW_EMIN) {
        return m * FW_POW2(e);
    }
    e = e < 2 * FW_EMIN ? 2 * FW_EMIN : e;
    return (m * FW_POW2(e - FW_EMIN)) * FW_POW2(FW_EMIN);
}
/* m * 2^e as an ACC_T (e clamped to +-FREXP_WALK_EXP_LIMIT, as ldexp takes it) */
#define FREXP_WALK_VALUE(m, e) frexp_walk_value((m), FREXP_WALK_CLAMP(e))
#endif

/* M(k) M(k + 1) ... : the terms k .. k + 7 (k + 31) of a block, written out */
#define WRITTEN_OUT_8(M, k) M(k) M((k) + 1) M((k) + 2) M((k) + 3) M((k) + 4) M((k) + 5) M((k) + 6) M((k) + 7)
#define WRITTEN_OUT_32(M, k) WRITTEN_OUT_8(M, k) WRITTEN_OUT_8(M, (k) + 8) WRITTEN_OUT_8(M, (k) + 16) \
                             WRITTEN_OUT_8(M, (k) + 24)

#endif /* FREXP_WALK_H */
