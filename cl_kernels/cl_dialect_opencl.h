/* cl_dialect_opencl.h: the OpenCL meaning of the portable vocabulary the kernels of this
 * folder use beside plain OpenCL C. The OpenCL backend puts this text in front of a .cl
 * file (clreduce/kernels.py, program_source); the CUDA backend puts cl_dialect_cuda.h there
 * instead, which lists every word and its CUDA meaning.
 *
 * It also enables the extensions a variant needs, from the macros every family shares
 * (ACC_IS_FLOAT / ACC_BYTES, SG_MODE, REQD_SG), and gives NVIDIA's driver, which has no
 * sub-group extension, warps as sub-groups (SG_MODE 4) and aligned vector loads (ALIGNED_VLOAD).
 */
#ifndef CL_DIALECT_OPENCL_H
#define CL_DIALECT_OPENCL_H

#define KERNEL_WG_SIZE(n) __attribute__((reqd_work_group_size((n), 1, 1)))
#define LOAD_RO(p) (*(p))
#define LOAD_RO_HALF(p) vload_half(0, (p))
#define CL_CAT_(a, b) a##b
#define CL_CAT(a, b) CL_CAT_(a, b)
#if defined(ALIGNED_VLOAD) && ALIGNED_VLOAD
/* NVIDIA's OpenCL compiler turns vloadn, which may assume only element alignment, into n
 * scalar loads (seen in its PTX: ld.global.f32 x4 for vload4; ld.global.v4.f32 through a
 * float4 pointer). Here vectors of up to 16 bytes are read through vector pointers once p is
 * aligned to their size, as on CUDA: VLOAD_HEAD elements go one at a time first. Wider vectors
 * keep vloadn. p points to IN_T. */
#define CL_VFITS(p, n) ((n) * sizeof(*(p)) <= 16)
#define CL_VBYTES(p, n) ((ulong)((n) * sizeof(*(p))))
#define VLOAD_HEAD(p, n) (CL_VFITS(p, n) ? (uint)(((CL_VBYTES(p, n) - (ulong)(p) % CL_VBYTES(p, n)) \
                                                % CL_VBYTES(p, n)) / sizeof(*(p))) : 0u)
#define VLOAD_ALIGNED(p, n) (!CL_VFITS(p, n) || (ulong)(p) % CL_VBYTES(p, n) == 0)
#define CL_ALOAD(n, p, d) CL_CAT(vstore, n)(CL_VFITS(p, n) ? *(__global const CL_CAT(IN_T, n) *)(p) \
                                                           : CL_CAT(vload, n)(0, p), 0, d)
/* half without cl_khr_fp16: one ushort vector load, converted from private memory */
#define CL_ALOAD_HALF(n, p, d) do {                                                           \
        ushort w_[n];                                                                         \
        CL_CAT(vstore, n)(*(__global const CL_CAT(ushort, n) *)(p), 0, w_);                  \
        CL_CAT(vstore, n)(CL_CAT(vload_half, n)(0, (const __private half *)w_), 0, d);       \
    } while (0)
#define CL_VLOAD_ARRAY_2(p, d) CL_ALOAD(2, p, d)
#define CL_VLOAD_ARRAY_4(p, d) CL_ALOAD(4, p, d)
#define CL_VLOAD_ARRAY_8(p, d) CL_ALOAD(8, p, d)
#define CL_VLOAD_ARRAY_16(p, d) CL_ALOAD(16, p, d)
#define CL_VLOAD_HALF_ARRAY_2(p, d) CL_ALOAD_HALF(2, p, d)
#define CL_VLOAD_HALF_ARRAY_4(p, d) CL_ALOAD_HALF(4, p, d)
#define CL_VLOAD_HALF_ARRAY_8(p, d) CL_ALOAD_HALF(8, p, d)
#define CL_VLOAD_HALF_ARRAY_16(p, d) vstore16(vload_half16(0, p), 0, d)
/* stores the same way: through a vector pointer where p is aligned to 16 bytes or less */
#define CL_ASTORE(n, d, p) do {                                                               \
        if (CL_VFITS(p, n)) {                                                                 \
            *(__global CL_CAT(OUT_T, n) *)(p) = CL_CAT(vload, n)(0, d);                       \
        } else {                                                                              \
            CL_CAT(vstore, n)(CL_CAT(vload, n)(0, d), 0, p);                                  \
        }                                                                                     \
    } while (0)
#define CL_ASTORE_HALF(n, d, p) do {                                                          \
        ushort w_[n];                                                                         \
        CL_CAT(vstore_half, n)(CL_CAT(vload, n)(0, d), 0, (__private half *)w_);              \
        *(__global CL_CAT(ushort, n) *)(p) = CL_CAT(vload, n)(0, w_);                         \
    } while (0)
#define CL_VSTORE_ARRAY_2(d, p) CL_ASTORE(2, d, p)
#define CL_VSTORE_ARRAY_4(d, p) CL_ASTORE(4, d, p)
#define CL_VSTORE_ARRAY_8(d, p) CL_ASTORE(8, d, p)
#define CL_VSTORE_ARRAY_16(d, p) CL_ASTORE(16, d, p)
#define CL_VSTORE_HALF_ARRAY_2(d, p) CL_ASTORE_HALF(2, d, p)
#define CL_VSTORE_HALF_ARRAY_4(d, p) CL_ASTORE_HALF(4, d, p)
#define CL_VSTORE_HALF_ARRAY_8(d, p) CL_ASTORE_HALF(8, d, p)
#define CL_VSTORE_HALF_ARRAY_16(d, p) vstore_half16(vload16(0, d), 0, p)
#else
/* vloadn / vload_halfn need only element alignment: no scalar head, every address will do */
#define VLOAD_HEAD(p, n) 0u
#define VLOAD_ALIGNED(p, n) 1
#define CL_VLOAD_ARRAY_2(p, d) vstore2(vload2(0, p), 0, d)
#define CL_VLOAD_ARRAY_4(p, d) vstore4(vload4(0, p), 0, d)
#define CL_VLOAD_ARRAY_8(p, d) vstore8(vload8(0, p), 0, d)
#define CL_VLOAD_ARRAY_16(p, d) vstore16(vload16(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_2(p, d) vstore2(vload_half2(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_4(p, d) vstore4(vload_half4(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_8(p, d) vstore8(vload_half8(0, p), 0, d)
#define CL_VLOAD_HALF_ARRAY_16(p, d) vstore16(vload_half16(0, p), 0, d)
#define CL_VSTORE_ARRAY_2(d, p) vstore2(vload2(0, d), 0, p)
#define CL_VSTORE_ARRAY_4(d, p) vstore4(vload4(0, d), 0, p)
#define CL_VSTORE_ARRAY_8(d, p) vstore8(vload8(0, d), 0, p)
#define CL_VSTORE_ARRAY_16(d, p) vstore16(vload16(0, d), 0, p)
#define CL_VSTORE_HALF_ARRAY_2(d, p) vstore_half2(vload2(0, d), 0, p)
#define CL_VSTORE_HALF_ARRAY_4(d, p) vstore_half4(vload4(0, d), 0, p)
#define CL_VSTORE_HALF_ARRAY_8(d, p) vstore_half8(vload8(0, d), 0, p)
#define CL_VSTORE_HALF_ARRAY_16(d, p) vstore_half16(vload16(0, d), 0, p)
#endif
/* vstoren into a private array: the kernels' loops then need no vector types */
#define VLOAD_ARRAY(n, p, d) CL_CAT(CL_VLOAD_ARRAY_, n)((p), (d))
#define VLOAD_HALF_ARRAY(n, p, d) CL_CAT(CL_VLOAD_HALF_ARRAY_, n)((p), (d))
/* VLOAD_KEEP_*: the CUDA dialect's loads with an L2 evict_last policy; here VLOAD_ARRAY's */
#define VLOAD_KEEP_ARRAY(n, p, d) VLOAD_ARRAY(n, p, d)
#define VLOAD_KEEP_HALF_ARRAY(n, p, d) VLOAD_HALF_ARRAY(n, p, d)
#define CL_VLOAD_ARRAY_1(p, d) ((d)[0] = (p)[0])
#define CL_VLOAD_HALF_ARRAY_1(p, d) ((d)[0] = vload_half(0, p))
/* VSTORE_ARRAY(n, d, p): n elements of the private array d to p, as VLOAD_ARRAY reads them
 * (ALIGNED_VLOAD: p must satisfy VLOAD_ALIGNED); VSTORE_HALF_ARRAY from floats to halves,
 * rounded to nearest even like vstore_half. OUT_T names p's element type. */
#define VSTORE_ARRAY(n, d, p) CL_CAT(CL_VSTORE_ARRAY_, n)((d), (p))
#define VSTORE_HALF_ARRAY(n, d, p) CL_CAT(CL_VSTORE_HALF_ARRAY_, n)((d), (p))
/* VSTORE_WIDE / VSTORE_HALF_WIDE: the CUDA dialect's 16-byte stores; here VSTORE_ARRAY's */
#define VSTORE_WIDE(n, d, p) VSTORE_ARRAY(n, d, p)
#define VSTORE_HALF_WIDE(n, d, p) VSTORE_HALF_ARRAY(n, d, p)
/* the CUDA dialect's cache-streaming loads and stores (row_common.h STREAM_WRITE); plain here */
#define VSTORE_WIDE_STREAM(n, d, p) VSTORE_ARRAY(n, d, p)
#define VSTORE_HALF_WIDE_STREAM(n, d, p) VSTORE_HALF_ARRAY(n, d, p)
#define VLOAD_LAST_ARRAY(n, p, d) VLOAD_ARRAY(n, p, d)
#define VLOAD_LAST_HALF_ARRAY(n, p, d) VLOAD_HALF_ARRAY(n, p, d)
#define CL_VSTORE_ARRAY_1(d, p) ((p)[0] = (d)[0])
#define CL_VSTORE_HALF_ARRAY_1(d, p) vstore_half((d)[0], 0, p)
/* The compilers unroll the small fixed loops anyway; not every driver parses the pragma. */
/* COLD_INLINE: a function only rare data reach; the CUDA dialect keeps it out of line */
#define COLD_INLINE inline
#define UNROLL_LOOP
#define NO_UNROLL
#define UNROLL_READ_WALK
#define UNROLL_DEFAULT 1
/* what this API can do: any sub-group width, qcom shuffles, width-request attributes, and
 * (NVIDIA's driver) word shuffles over warps in inline PTX */
#define FIXED_SG_SIZE 0
#define HAS_QCOM_SHUFFLE 1
#define HAS_REQD_SG_ATTRS 1
#define HAS_WORD_SHUFFLE 1
#define HAS_VEC_MATH 1
/* frexp_walk.h scales by powers of two it builds from bits, not ldexp: Intel's CPU runtime
 * 2026.2 on a host without AVX-512 has no ldexp for 32 or 64 floats at once and failed to
 * link the rescued products at those sub-group widths */
#define HAS_LDEXP_EVERYWHERE 0
/* exp for results rounded to float16: exp itself (native_exp's accuracy is the driver's to
 * choose, and mobile drivers document none) */
#define HALF_EXP(x) exp(x)
/* register rows load run by run (row_common.h, load_runs): CPU runtimes, one row a work-item,
 * gain nothing from the loads issued together, and PoCL lost 20-38 % on float16 rms_norm rows
 * of 128 that way (this AMD host); OpenCL GPUs are unmeasured */
#define LOAD_RUNS_TOGETHER 0
/* sub_group_shuffle (a per-lane source lane) needs cl_khr_subgroup_shuffle, which the
 * sub-group modes do not require: kernels do not rely on it here */
#define HAS_LANE_SHUFFLE 0
/* sub_group_any belongs to cl_khr_subgroups, which the shuffle modes do not require */
#define HAS_SUB_GROUP_VOTE 0
/* OpenCL (1.2 and 3.0) promises no forward progress between work-groups: a work-group that
 * spins on another's flag may wait forever (Mali and Adreno run groups in waves). The
 * decoupled look-back of row_scan.cl #errors here; TICKET, PUBLISH_FLAG, OBSERVE_FLAG and
 * POLL_PAUSE are spelled out only so the vocabulary is the same on both APIs. */
#define HAS_GROUP_PROGRESS 0
#define TICKET(p) atomic_inc(p)
#define PUBLISH_FLAG(p, v) do { mem_fence(CLK_GLOBAL_MEM_FENCE); *(volatile __global uint *)(p) = (v); } while (0)
#define OBSERVE_FLAG(p) cl_observe_flag_(p)
#define POLL_PAUSE()
inline uint cl_observe_flag_(const __global uint *p) {
    const uint v = *(const volatile __global uint *)p;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    return v;
}
/* Background copies to local memory (the CUDA dialect's cp.async) are plain copies here:
 * STAGE_WAIT has nothing to wait for. Spelled out for the same reason as the flags above. */
#define HAS_STAGE_COPY 0
#define STAGE_COPY16(d, p) (*(__local uint4 *)(d) = *(__global const uint4 *)(p))
#define STAGE_COMMIT()
#define STAGE_WAIT(n)
#define LOCAL_VLOAD_ARRAY(n, p, d) do { for (int j_ = 0; j_ < (n); ++j_) (d)[j_] = (p)[j_]; } while (0)
#define LOCAL_VLOAD_HALF_ARRAY(n, p, d) do { for (int j_ = 0; j_ < (n); ++j_) (d)[j_] = vload_half(j_, p); } while (0)

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
#if defined(SG_MODE) && SG_MODE == 4 && !defined(CL_DIALECT_OPENCL_PTX)
#define CL_DIALECT_OPENCL_PTX
/* NVIDIA's driver lists no sub-group extension, but a 1-D work-group runs as warps of 32
 * consecutive work-items, and its compiler takes inline PTX: the sub-group words the kernels
 * use in SG_MODE 4, on the warp. The planner uses this mode only when the probe's shuffle
 * kernel gave exact sums on the device (clreduce/backends/opencl_probe.py). */
#define get_sub_group_local_id() ((uint)get_local_id(0) & 31u)
#define get_sub_group_id() ((uint)get_local_id(0) >> 5)
/* xor shuffle of one 32-bit word across the warp (every lane takes part: uniform control flow) */
inline uint word_shuffle_xor(uint v, uint mask)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
    return r;
}
#endif
