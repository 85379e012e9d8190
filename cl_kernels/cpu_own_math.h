/* cpu_own_math.h: CPU_OWN_MATH (planner: CPU_PASSES plans of softmax.cl and row_norm.cl on
 * PoCL; default 0): isfinite, isinf, isnan, fabs, fmax and rsqrt written with operators.
 * pip's PoCL 3.0 calls them out of line. A row walked by one work-item takes a few of them (the
 * norms: the rescue and scaling tests, the variance clamp, the compensated fold of the lanes'
 * sums; softmax: the fold of its sum, log_softmax's shift), and on rows of 32-64 floats they
 * were a third of the call (benchmarks/norm_cpu_own_math_2026-11-29/). Included ahead of
 * row_common.h, so its helpers take them too.
 * The forms agree with the built-ins on every input, so any use in the including files (live
 * or not on a CPU_PASSES plan) means what it meant: inf - inf and NaN - NaN are NaN; fabs of
 * -0 is 0 - -0 = +0; fmax drops one NaN operand, as the built-in does; rsqrt is 1 / sqrt
 * (sqrt correctly rounded: under 1.5 ulp, OpenCL allows rsqrt 2). Arguments are named more
 * than once: side-effect free at every use. CPU plans only: CUDA and GPUs keep the
 * built-ins. */
#ifndef CPU_OWN_MATH_H
#define CPU_OWN_MATH_H
#ifndef CPU_OWN_MATH
#define CPU_OWN_MATH 0
#endif
#if CPU_OWN_MATH
#if !defined(CPU_PASSES) || !CPU_PASSES
#error "CPU_OWN_MATH: CPU_PASSES plans only"
#endif
#define isfinite(x) ((x) - (x) == 0)
#define isinf(x) ((x) == (x) && (x) - (x) != 0)
#define isnan(x) ((x) != (x))
#define fabs(x) ((x) <= 0 ? 0 - (x) : (x))
#define fmax(a, b) ((a) > (b) || (b) != (b) ? (a) : (b))
#define rsqrt(x) (1 / sqrt(x))
#endif
#endif
