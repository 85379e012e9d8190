/* cpu_vec.h: the vector vocabulary of the CPU-only code (reduce_rows.cl's reduce_rows_cpu,
 * reduce_state.cl's reduce_rows_state_cpu, softmax.cl's and row_norm.cl's CPU_PASSES walks,
 * row_scan.cl's CPU_OWN_EXP logcumsumexp lanes):
 * loads of VEC elements as one OpenCL vector, the conversion to the accumulator's vector type,
 * built-ins spelled with operators, and compensated sums lane by lane.
 *
 * The files `#include "cpu_vec.h"` inside their CPU-only blocks; clreduce/kernels.py
 * splices this text in where the include stands (as row_common.h), so the source hash sees
 * it and the wheel needs no include path. Those blocks are compiled only for CPU plans
 * (CPU_BLOCKS 1 / ENTRY 3 / CPU_PASSES 1 / CPU_OWN_EXP 1), which CUDA never gets, so OpenCL
 * vector types are allowed here.
 *
 * Why operators and not built-ins: PoCL 3.0 from pip calls its built-ins (vloadN, isnan,
 * max, fmax, min) as out-of-line functions, spilling every vector register around each call
 * in the hot loop (seen in the objects it caches). A vector load is built from VEC scalar
 * loads (every compiler here merges them into one unaligned vector load); isnan(x) is x != x.
 *
 * Required macros: VEC (1, 2, 4, 8 or 16), IN_T, RAW_T (the loaded scalar type: float for
 * half input, else IN_T), ACC_T, IN_HALF, OUT_HALF, CAT (token pasting after expansion).
 * Defines: CPU_ISNAN, CPU_MIN_U64, CPU_V(t) (t's VEC-wide vector type; t when VEC is 1),
 * CPU_RAWV, CPU_ACCV, CPU_LOAD(p) (VEC elements at p as CPU_RAWV), CPU_TO_ACC(x),
 * CPU_LOAD_ACC(p), CPU_MASK(c) (a comparison as -1 / 0 in every lane, scalar or vector),
 * CPU_VLOAD(t, p) (VEC elements of type t at p, VEC > 1), CPU_STORE(v, q) (a CPU_ACCV to
 * VEC elements of OUT_T at q, VEC > 1), cpu_half_bits_to_float (VEC > 1; CPU_LOAD's with
 * CPU_HALF_BITS 1), cpu_exp and cpu_log (VEC > 1), CPU_ABS(v), CPU_NSUM_ADD(s, c, v), CPU_NSUM_ADD_POS(s, c, v) and
 * CPU_NSUM_VALUE(s, c) (Neumaier-compensated sums of CPU_ACCV lanes: softmax.cl's exp sums,
 * row_norm.cl's moments).
 */
#ifndef CPU_VEC_H
#define CPU_VEC_H

#ifndef VEC
#error "cpu_vec.h needs VEC"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "cpu_vec.h: VEC must be 1, 2, 4, 8 or 16"
#endif
#if !defined(IN_T) || !defined(RAW_T) || !defined(ACC_T)
#error "cpu_vec.h needs IN_T, RAW_T and ACC_T"
#endif
#if !defined(IN_HALF) || !defined(OUT_HALF)
#error "cpu_vec.h needs IN_HALF and OUT_HALF (0/1)"
#endif
#if !defined(CAT) /* the including file's own macro, not a plan define */
#error "cpu_vec.h needs CAT(a, b) (paste after expansion)"
#endif

/* CPU_F16C: where the compiler targets an x86 CPU with F16C (__F16C__: both PoCLs here, pip's
 * for znver3 and Debian's for skylake-avx512; not Intel's runtime, rusticl or CUDA), a vector
 * of halves is widened, and a float vector rounded to halves (to nearest even, as vstore_half),
 * by one instruction each (vcvtph2ps, vcvtps2ph) through clang's builtins, eight lanes at a
 * time (below). The same bits as the integer widening and vstore_half (tests/test_cpu_vec.py
 * checks every half and rounding ties on each device); the integer widening took ~12
 * instructions a vector and vstore_halfn was an out-of-line call on pip's PoCL.
 * CPU_HALF_F16C (the including file's choice, default 0): float16 loaded as bits
 * (CPU_HALF_BITS 1) only where CPU_F16C holds, else through vload_halfn as before -- for walks
 * measured faster so only with the instructions (the reductions' blocks). */
#if defined(__F16C__) && defined(__x86_64__) && VEC > 1
#define CPU_F16C 1
#else
#define CPU_F16C 0
#endif
#if !defined(CPU_HALF_BITS) && defined(CPU_HALF_F16C) && CPU_F16C
#if CPU_HALF_F16C
#define CPU_HALF_BITS 1
#endif
#endif

#define CPU_ISNAN(x) ((x) != (x))
#define CPU_MIN_U64(a, b) ((a) < (b) ? (a) : (b))
#if VEC == 1
#define CPU_V(t) t
#if IN_HALF
#define CPU_LOAD(p) LOAD_RO_HALF(p)
#else
#define CPU_LOAD(p) LOAD_RO(p)
#endif
#define CPU_TO_ACC(x) ((ACC_T)(x))
/* a scalar comparison's true is 1: negate it */
#define CPU_MASK(c) (-(long)(c))
#else
#define CPU_V(t) CAT(t, VEC)
#if IN_HALF && CPU_HALF_BITS
#define CPU_LOAD(p) cpu_half_bits_to_float(CPU_VLOAD(ushort, (__global const ushort *)(p)))
#elif IN_HALF
#define CPU_LOAD(p) CAT(vload_half, VEC)(0, (p))
#else
#define CPU_LOAD(p) CAT(CPU_LOAD_, VEC)(p)
#endif
#define CPU_TO_ACC(x) CAT(convert_, CPU_V(ACC_T))(x)
/* a vector comparison's true is already -1 in every lane */
#define CPU_MASK(c) (c)
#endif
#define CPU_RAWV CPU_V(RAW_T)
#define CPU_ACCV CPU_V(ACC_T)
/* VEC elements of type t at p as one vector, built from scalar loads */
#define CPU_VLOAD(t, p) CAT(CPU_VLOAD_, VEC)(t, p)
#define CPU_VLOAD_2(t, p) ((CPU_V(t))((p)[0], (p)[1]))
#define CPU_VLOAD_4(t, p) ((CPU_V(t))((p)[0], (p)[1], (p)[2], (p)[3]))
#define CPU_VLOAD_8(t, p) ((CPU_V(t))((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#define CPU_VLOAD_16(t, p) ((CPU_V(t))((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                                       (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], (p)[15]))
#define CPU_LOAD_2(p) CPU_VLOAD_2(RAW_T, p)
#define CPU_LOAD_4(p) CPU_VLOAD_4(RAW_T, p)
#define CPU_LOAD_8(p) CPU_VLOAD_8(RAW_T, p)
#define CPU_LOAD_16(p) CPU_VLOAD_16(RAW_T, p)
#define CPU_LOAD_ACC(p) CPU_TO_ACC(CPU_LOAD(p))
/* |x| of VEC elements at p. float16 bits lose their sign bit before they are widened: a
 * compare of a widened half with 0 (CPU_ABS's select) was narrowed back by LLVM to a compare
 * of halves, which x86 without native float16 ran element by element (pip's PoCL with
 * CPU_F16C: float16 absmax_scale 1.6x slower than with the integer widening) */
#if VEC > 1 && IN_HALF && CPU_HALF_BITS
#define CPU_LOAD_ABS_ACC(p) CPU_TO_ACC(cpu_half_bits_to_float(CPU_VLOAD(ushort, (__global const ushort *)(p)) \
                                                              & (ushort)0x7fff))
#else
#define CPU_LOAD_ABS_ACC(p) CPU_ABS(CPU_LOAD_ACC(p))
#endif

#if VEC > 1
/* CPU_HALF_BITS (the including file's choice, default 0): float16 vectors are loaded as their
 * bits and widened with integer operators, exactly (every half is a float), in place of
 * vload_halfn. Debian's PoCL (pthread-haswell) compiled row_norm.cl's vload_half8 of a row into
 * a load that needs 16-byte alignment: float16 rms_norm of 24 x 13 (rows starting 26 bytes
 * apart) killed the process with a segmentation fault, rows of 24 or 1000 halves ran. */
#ifndef CPU_HALF_BITS
#define CPU_HALF_BITS 0
#endif
#if CPU_F16C  /* the conversions, eight lanes at a time (CPU_F16C above) */
typedef short cpu_v8hi __attribute__((__vector_size__(16)));
typedef float cpu_v8sf __attribute__((__vector_size__(32)));
inline float8 cpu_f16c_widen8(const ushort8 bits) {
    return __builtin_astype(__builtin_ia32_vcvtph2ps256(__builtin_astype(bits, cpu_v8hi)), float8);
}
inline ushort8 cpu_f16c_round8(const float8 v) {
    /* immediate 0: round to nearest even, the immediate's mode (not MXCSR's) */
    return __builtin_astype(__builtin_ia32_vcvtps2ph256(__builtin_astype(v, cpu_v8sf), 0), ushort8);
}
#endif

inline CPU_V(float) cpu_half_bits_to_float(const CPU_V(ushort) bits) {
#if CPU_F16C && VEC == 16
    return (float16)(cpu_f16c_widen8(bits.lo), cpu_f16c_widen8(bits.hi));
#elif CPU_F16C && VEC == 8
    return cpu_f16c_widen8(bits);
#elif CPU_F16C && VEC == 4
    return cpu_f16c_widen8((ushort8)(bits, (ushort4)0)).lo;
#elif CPU_F16C
    return cpu_f16c_widen8((ushort8)(bits, (ushort2)0, (ushort4)0)).lo.lo;
#else
    const CPU_V(uint) h = CAT(convert_, CPU_V(uint))(bits);
    const CPU_V(uint) mag = h & 0x7fffu;
    /* normal halves: the exponent rebiased from 15 to 127 (112 << 23); inf and NaN: the float's
     * all-ones exponent, the payload kept; subnormals (and zero): the 10-bit value times 2^-24 */
    const CPU_V(uint) normal = (mag << 13) + 0x38000000u;
    const CPU_V(uint) special = (mag << 13) | 0x7f800000u;
    const CPU_V(float) small = CAT(convert_, CPU_V(float))(mag) * 0x1p-24f;
    CPU_V(uint) out = mag >= 0x7c00u ? special : normal;
    out = mag < 0x400u ? CAT(as_, CPU_V(uint))(small) : out;
    return CAT(as_, CPU_V(float))(out | ((h & 0x8000u) << 16));
#endif
}
#endif

#if VEC > 1
/* exp of a float vector, written with operators (exp is a call on pip's PoCL, as above): Cody
 * and Waite's range reduction, then Cephes' expf polynomial coefficients; within 1 ulp of
 * float64 exp rounded, subnormal results included, on all four CPU runtimes
 * (tests/test_cpu_vec.py). x is clamped to [-104, 89]: below, exp rounds to 0 (exp(-104) is
 * under half the least subnormal); above, to inf (exp(89) > FLT_MAX); a NaN passes both clamps
 * (its comparisons are false) and the arithmetic. n = rint(x / ln 2) by adding 1.5 * 2^23;
 * r = x - n ln 2 in two parts (ln2_hi has 9 significant bits: n * ln2_hi is exact); exp(r)
 * on |r| <= ln 2 / 2 by the degree-7 polynomial; then two factors 2^(n/2) and 2^(n - n/2),
 * each a normal float, so a result in the subnormal range is rounded once. */
inline CPU_V(float) cpu_exp(CPU_V(float) x) {
    x = x < -104.0f ? (CPU_V(float))(-104.0f) : x;
    x = x > 89.0f ? (CPU_V(float))89.0f : x;
    const CPU_V(float) t = x * 1.44269504088896341f + 12582912.0f;
    const CPU_V(float) n = t - 12582912.0f;
    const CPU_V(int) ni = CAT(as_, CPU_V(int))(t) - 0x4b400000;
    const CPU_V(float) r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    const CPU_V(float) poly = ((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                                  + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * (r * r)
                               + r) + 1.0f;
    const CPU_V(int) n1 = ni >> 1;
    return poly * CAT(as_, CPU_V(float))((n1 + 127) << 23) * CAT(as_, CPU_V(float))((ni - n1 + 127) << 23);
}
#endif

#if VEC > 1
/* log of a float vector, written with operators (log, like exp, is an out-of-line call on pip's
 * PoCL): row_scan.cl's logcumsumexp lanes on PoCL (CPU_OWN_EXP). x = 2^e * m with m in
 * [sqrt(1/2), sqrt(2)), split off with integer operators on the bits (a frexp that needs no
 * call): adding 0x3f800000 - 0x3f3504f3 (1.0f's bits less sqrt(1/2)'s) to the bits carries into
 * the exponent exactly where the mantissa is at least sqrt(2)'s, so e is the exponent field
 * less 127 and m the low 23 bits over sqrt(1/2)'s. log(1 + f), f = m - 1 in [-0.293, 0.415), is
 * f - f^2 / 2 + f^3 P(f) with the degree-8 P of Cephes' logf (Moshier, Cephes Math Library,
 * logf.c), and e ln 2 is added in two parts (ln2_hi = 0.693359375, 9 bits, as in cpu_exp) after
 * the small terms, so a result near 0 (x near 1) keeps f's relative accuracy. Subnormal x is
 * scaled by 2^23 first (exact) and 23 taken off e. Special values by selects at the end: 0 ->
 * -inf, +inf -> +inf, NaN -> NaN, x < 0 -> NaN. Within 0.8 ulp of float64 log on all four
 * CPU runtimes, subnormals included (tests/test_cpu_vec.py). */
inline CPU_V(float) cpu_log(const CPU_V(float) x) {
    const CPU_V(float) xs = x < 0x1p-126f ? x * 0x1p23f : x;
    const CPU_V(int) bits = CAT(as_, CPU_V(int))(xs) + (0x3f800000 - 0x3f3504f3);
    /* the exponent as a float by the 1.5 * 2^23 trick (convert_floatn could be a call too) */
    const CPU_V(int) ei = (bits >> 23) - 0x7f - (CPU_MASK(x < 0x1p-126f) & 23);
    const CPU_V(float) e = CAT(as_, CPU_V(float))(ei + 0x4b400000) - 12582912.0f;
    const CPU_V(float) f = CAT(as_, CPU_V(float))((bits & 0x007fffff) + 0x3f3504f3) - 1.0f;
    const CPU_V(float) z = f * f;
    const CPU_V(float) p = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f
                                  - 1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f
                                + 2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f) * f * z;
    const CPU_V(float) y = ((p + e * -2.12194440e-4f) - 0.5f * z + f) + e * 0.693359375f;
    /* x in (0, inf): y; else 0 -> -inf, +inf and NaN -> x, x < 0 -> NaN */
    const CPU_V(float) other = x == 0.0f ? (CPU_V(float))(-INFINITY) : (x < 0.0f ? (CPU_V(float))NAN : x);
    return x > 0.0f && x < INFINITY ? y : other;
}
#endif

/* Stores of a vector, component by component (vstoren: out of line on pip's PoCL, as vloadn). The
 * value goes once into a variable: the component stores name it VEC times, and PoCL does not
 * merge repeated calls of a built-in such as exp in it (softmax.cl's split write took 4x as long). */
#define CPU_STORE_2(v, q) ((q)[0] = (v).s0, (q)[1] = (v).s1)
#define CPU_STORE_4(v, q) (CPU_STORE_2((v).lo, (q)), CPU_STORE_2((v).hi, (q) + 2))
#define CPU_STORE_8(v, q) (CPU_STORE_4((v).lo, (q)), CPU_STORE_4((v).hi, (q) + 4))
#define CPU_STORE_16(v, q) (CPU_STORE_8((v).lo, (q)), CPU_STORE_8((v).hi, (q) + 8))
#if OUT_HALF && CPU_F16C
/* rounded to nearest even, once, by vcvtps2ph (CPU_F16C above), stored as the halves' bits */
#define CPU_STORE(v, q) do { const CPU_ACCV v_ = (v); const CPU_V(ushort) b_ = cpu_f16c_bits(v_);          \
                             CAT(CPU_STORE_, VEC)(b_, (__global ushort *)(q)); } while (0)
#if VEC == 16
#define cpu_f16c_bits(v) ((ushort16)(cpu_f16c_round8((v).lo), cpu_f16c_round8((v).hi)))
#elif VEC == 8
#define cpu_f16c_bits(v) cpu_f16c_round8(v)
#elif VEC == 4
#define cpu_f16c_bits(v) (cpu_f16c_round8((float8)((v), (float4)0)).lo)
#else
#define cpu_f16c_bits(v) (cpu_f16c_round8((float8)((v), (float2)0, (float4)0)).lo.lo)
#endif
#elif OUT_HALF
/* rounded to nearest even, once, as vstore_half does */
#define CPU_STORE(v, q) do { const CPU_ACCV v_ = (v); CAT(vstore_half, VEC)(v_, 0, (q)); } while (0)
#else
#define CPU_STORE(v, q) do { const CPU_ACCV v_ = (v); CAT(CPU_STORE_, VEC)(v_, (q)); } while (0)
#endif

#if VEC > 1
/* A vector's lanes folded pairwise, halves by halves (.lo / .hi), in registers: a loop over
 * the lanes through the vector's address put it in memory on pip's PoCL, once a row, which
 * rows of 32 (4 runs) felt. v must be a variable (the halves name it several times).
 * CPU_HMAX takes the larger by a compare and select: NaN lanes must not occur (cpu_max's
 * lanes never hold one). CPU_HSUM's pairwise order is at least as accurate as the lanes in
 * a row. */
#define CPU_HSUM_2(v) ((v).s0 + (v).s1)
#define CPU_HSUM_4(v) CPU_HSUM_2((v).lo + (v).hi)
#define CPU_HSUM_8(v) CPU_HSUM_4((v).lo + (v).hi)
#define CPU_HSUM_16(v) CPU_HSUM_8((v).lo + (v).hi)
#define CPU_HSUM(v) CAT(CPU_HSUM_, VEC)(v)
#define CPU_MAX_SEL(a, b) ((b) > (a) ? (b) : (a))
#define CPU_HMAX_2(v) CPU_MAX_SEL((v).s0, (v).s1)
#define CPU_HMAX_4(v) CPU_HMAX_2(CPU_MAX_SEL((v).lo, (v).hi))
#define CPU_HMAX_8(v) CPU_HMAX_4(CPU_MAX_SEL((v).lo, (v).hi))
#define CPU_HMAX_16(v) CPU_HMAX_8(CPU_MAX_SEL((v).lo, (v).hi))
#define CPU_HMAX(v) CAT(CPU_HMAX_, VEC)(v)
#endif

/* Neumaier-compensated sums in every lane of a (sum s, compensation c) vector pair, as
 * nsum_add and nsum_value give them element by element. CPU_ABS: |v| by a select (fabs is a
 * call on pip's PoCL, as above). CPU_NSUM_ADD_POS where s and v are >= 0 (the larger magnitude
 * is the larger value). CPU_NSUM_VALUE: a lane's s + c where s is finite (s - s is 0 only
 * then), else s, so an inf sum keeps its value where its compensation went NaN. */
#define CPU_ABS(v) ((v) < (ACC_T)0 ? -(v) : (v))
#define CPU_NSUM_ADD(s, c, v) do {                                                            \
        const CPU_ACCV t_ = (s) + (v);                                                        \
        (c) += CPU_ABS(s) >= CPU_ABS(v) ? ((s) - t_) + (v) : ((v) - t_) + (s);                \
        (s) = t_;                                                                             \
    } while (0)
#define CPU_NSUM_ADD_POS(s, c, v) do {                                                        \
        const CPU_ACCV t_ = (s) + (v);                                                        \
        (c) += (s) >= (v) ? ((s) - t_) + (v) : ((v) - t_) + (s);                              \
        (s) = t_;                                                                             \
    } while (0)
#define CPU_NSUM_VALUE(s, c) ((s) - (s) == (ACC_T)0 ? (s) + (c) : (s))

#endif /* CPU_VEC_H */
