/* cl_dialect_opencl.h: the OpenCL meaning of the portable vocabulary the kernels of this
 * folder use beside plain OpenCL C. The OpenCL backend puts this text in front of a .cl
 * file (clreduce/kernels.py, program_source); the CUDA backend puts cl_dialect_cuda.h there
 * instead, which lists every word and its CUDA meaning.
 *
 * It also enables the extensions a variant needs, from the macros every family shares
 * (ACC_IS_FLOAT / ACC_BYTES, SG_MODE, REQD_SG).
 */
#ifndef CL_DIALECT_OPENCL_H
#define CL_DIALECT_OPENCL_H

#define KERNEL_WG_SIZE(n) __attribute__((reqd_work_group_size((n), 1, 1)))
#define LOAD_RO(p) (*(p))
#define LOAD_RO_HALF(p) vload_half(0, (p))
/* vloadn / vload_halfn need only element alignment: no scalar head, every address will do */
#define VLOAD_HEAD(p, n) 0u
#define VLOAD_ALIGNED(p, n) 1
#define CL_CAT_(a, b) a##b
#define CL_CAT(a, b) CL_CAT_(a, b)
/* vstoren into a private array: the kernels' loops then need no vector types */
#define VLOAD_ARRAY(n, p, d) CL_CAT(CL_VLOAD_ARRAY_, n)((p), (d))
#define VLOAD_HALF_ARRAY(n, p, d) CL_CAT(CL_VLOAD_HALF_ARRAY_, n)((p), (d))
#define CL_VLOAD_ARRAY_1(p, d) ((d)[0] = (p)[0])
#define CL_VLOAD_ARRAY_2(p, d) vstore2(vload2(0, p), 0, d)
#define CL_VLOAD_ARRAY_4(p, d) vstore4(vload4(0, p), 0, d)
#define CL_VLOAD_ARRAY_8(p, d) vstore8(vload8(0, p), 0, d)
#define CL_VLOAD_ARRAY_16(p, d) vstore16(vload16(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_1(p, d) ((d)[0] = vload_half(0, p))
#define CL_VLOAD_HALF_ARRAY_2(p, d) vstore2(vload_half2(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_4(p, d) vstore4(vload_half4(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_8(p, d) vstore8(vload_half8(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_16(p, d) vstore16(vload_half16(0, p), 0, d)
/* The compilers unroll the small fixed loops anyway; not every driver parses the pragma. */
#define UNROLL_LOOP
#define NO_UNROLL
#define UNROLL_DEFAULT 1
/* what this API can do: any sub-group width, qcom shuffles, width-request attributes */
#define FIXED_SG_SIZE 0
#define HAS_QCOM_SHUFFLE 1
#define HAS_REQD_SG_ATTRS 1

#endif /* CL_DIALECT_OPENCL_H */

/* ---- per variant (outside the guard) ---------------------------------------------------- */
#if ACC_BYTES == 8 && ACC_IS_FLOAT
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if defined(SG_MODE) && SG_MODE != 0 && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if defined(SG_MODE) && SG_MODE == 2
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#endif
#if defined(SG_MODE) && SG_MODE == 3
#pragma OPENCL EXTENSION cl_qcom_subgroup_shuffle : enable
#endif
#if defined(REQD_SG) && (REQD_SG == 2 || REQD_SG == 3)
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
#endif
