/* cpu_vec.h: the vector vocabulary of the CPU-block entries (reduce_rows.cl's reduce_rows_cpu,
 * reduce_state.cl's reduce_rows_state_cpu): loads of VEC elements as one OpenCL vector, the
 * conversion to the accumulator's vector type, and built-ins spelled with operators.
 *
 * The two files `#include "cpu_vec.h"` inside their CPU-only blocks; clreduce/kernels.py
 * splices this text in where the include stands (as row_common.h), so the source hash sees
 * it and the wheel needs no include path. Those blocks are compiled only for CPU plans
 * (CPU_BLOCKS 1 / ENTRY 3), which CUDA never gets, so OpenCL vector types are allowed here.
 *
 * Why operators and not built-ins: PoCL 3.0 from pip calls its built-ins (vloadN, isnan,
 * max, fmax, min) as out-of-line functions, spilling every vector register around each call
 * in the hot loop (seen in the objects it caches). A vector load is built from VEC scalar
 * loads (every compiler here merges them into one unaligned vector load); isnan(x) is x != x.
 *
 * Required macros: VEC (1, 2, 4, 8 or 16), IN_T, RAW_T (the loaded scalar type: float for
 * half input, else IN_T), ACC_T, IN_HALF, CAT (token pasting after expansion).
 * Defines: CPU_ISNAN, CPU_MIN_U64, CPU_V(t) (t's VEC-wide vector type; t when VEC is 1),
 * CPU_RAWV, CPU_ACCV, CPU_LOAD(p) (VEC elements at p as CPU_RAWV), CPU_TO_ACC(x),
 * CPU_LOAD_ACC(p), CPU_MASK(c) (a comparison as -1 / 0 in every lane, scalar or vector).
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
#ifndef IN_HALF
#error "cpu_vec.h needs IN_HALF (0/1)"
#endif
#if !defined(CAT) /* the including file's own macro, not a plan define */
#error "cpu_vec.h needs CAT(a, b) (paste after expansion)"
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
#if IN_HALF
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
#define CPU_LOAD_2(p) ((CPU_RAWV)((p)[0], (p)[1]))
#define CPU_LOAD_4(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3]))
#define CPU_LOAD_8(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#define CPU_LOAD_16(p) ((CPU_RAWV)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                                   (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], (p)[15]))
#define CPU_LOAD_ACC(p) CPU_TO_ACC(CPU_LOAD(p))

#endif /* CPU_VEC_H */
