/* cpu_passes.h: cpu_vec.h as the CPU_PASSES walks of softmax.cl, row_norm.cl and row_scale.cl
 * take it: vectors of the input's elements (float16 loaded as floats: RAW_T), float16 loaded
 * as its bits and widened with integer operators (CPU_HALF_BITS 1: Debian's PoCL compiled a
 * vload_half8 into a load that needs 16-byte alignment, see cpu_vec.h). Included inside each
 * file's `#if CPU_PASSES` block, which CUDA never compiles. */
#ifndef CPU_PASSES_H
#define CPU_PASSES_H
#if IN_HALF
#define RAW_T float  /* cpu_vec.h's loaded type: float16 loads give floats */
#else
#define RAW_T IN_T
#endif
#define CPU_HALF_BITS 1
#include "cpu_vec.h"
/* runs a walk adds plainly in each lane between compensated steps (row_norm.cl's moments,
 * softmax.cl's exp sums) */
#ifndef CPU_BLOCK_RUNS
#define CPU_BLOCK_RUNS 8
#endif
#endif
