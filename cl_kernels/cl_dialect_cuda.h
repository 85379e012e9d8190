/* cl_dialect_cuda.h: the OpenCL C that clreduce's kernels use, spelled in CUDA C++, so that
 * NVRTC (or nvcc) compiles the .cl files of this folder unchanged as CUDA kernels.
 *
 * The CUDA backend puts this text in front of a .cl file (clreduce/kernels.py,
 * program_source); the OpenCL backend puts cl_dialect_opencl.h there instead. Both define the
 * same portable vocabulary (the second list below), so every kernel has one source and no
 * `#if` on the API.
 *
 * OpenCL C mapped onto CUDA:
 *   __kernel __global __local restrict inline; uchar ushort uint ulong half (half is 16-bit
 *   storage: vload_half / vstore_half convert with cvt.f32.f16 / cvt.rn.f16.f32);
 *   get_local_id get_group_id get_num_groups get_local_size get_global_id get_global_size
 *   (1-D: dimension 0 only); barrier; the sub-group built-ins on the warp: get_sub_group_*,
 *   sub_group_shuffle_xor (__shfl_xor_sync), sub_group_broadcast (__shfl_sync),
 *   sub_group_any, sub_group_reduce_add/max/min
 *   (__reduce_*_sync for 32-bit integers on sm_80+, an xor butterfly otherwise);
 *   isnan isfinite isinf fabs fmax fmin max min clamp select rint rsqrt as_uint as_int
 *   as_float as_ulong as_long as_double (scalars) (exp log log1p sqrt:
 *   CUDA's own float/double overloads); sub_group_scan_exclusive_add (shuffle-up steps);
 *   INFINITY NAN INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX (OpenCL's long is
 *   64-bit everywhere); LOCAL_PTR, the qualifier of a local-memory pointer parameter, is empty
 *   (shared-memory pointers are generic in CUDA).
 *   Not mapped: vector types and vloadn (kernels load through VLOAD_ARRAY instead),
 *   cl_qcom_subgroup_shuffle (SG_MODE 3) and the reqd_sub_group_size attributes (REQD_SG
 *   must be 0: the warp width is fixed) -- the kernels #error on those.
 *
 * Portable vocabulary (cl_dialect_opencl.h gives the OpenCL meaning):
 *   KERNEL_WG_SIZE(n)   reqd_work_group_size(n,1,1) | __launch_bounds__(n, MIN_BLOCKS)
 *   LOAD_RO(p)          read an input element no work-item writes during the launch
 *                       (*p | __ldg: the non-coherent cache)
 *   LOAD_RO_HALF(p)     the same for a half element, as float
 *   VLOAD_ARRAY(n, p, d)       n elements at p into the private array d (vloadn | one or
 *                              more 16-byte loads of read-only data; p must satisfy VLOAD_ALIGNED)
 *   VLOAD_HALF_ARRAY(n, p, d)  the same for half elements into a float array
 *   VLOAD_KEEP_ARRAY(n, p, d), VLOAD_KEEP_HALF_ARRAY(n, p, d)  the same for data re-read
 *                              while other data streams past (VLOAD_ARRAY | an L2
 *                              evict_last policy: a row op's weight and bias)
 *   VLOAD_HEAD(p, n)    elements to read one at a time before p + head may start an n-element
 *                       VLOAD_ARRAY (0 | up to the next min(16, n * size)-byte boundary)
 *   VLOAD_ALIGNED(p, n) p may start an n-element VLOAD_ARRAY (1 | that alignment holds)
 *   VSTORE_ARRAY(n, d, p)      n elements of the private array d to p (vstoren | 16-byte
 *                              stores; p must satisfy VLOAD_ALIGNED)
 *   VSTORE_HALF_ARRAY(n, d, p) the same from a float array to half elements (rounded to even)
 *   VSTORE_WIDE(n, d, p), VSTORE_HALF_WIDE(n, d, p)  the same (VSTORE_ARRAY | one store
 *                              instruction per 16 bytes, where VSTORE_ARRAY's may give four)
 *   UNROLL_LOOP / NO_UNROLL   loop pragmas (nothing | #pragma unroll / unroll 1)
 *   COLD_INLINE         a function for rare data, out of the hot code (inline | __noinline__)
 *   UNROLL_READ_WALK    the row ops' read-only run walks (nothing | #pragma unroll 4)
 *   UNROLL_DEFAULT      loads in flight per work-item when the plan gives no UNROLL (1 | 4)
 *   FIXED_SG_SIZE       the only sub-group width there is, 0 if the device picks (0 | 32)
 *   HAS_QCOM_SHUFFLE    qcom_sub_group_shuffle_xor may be used (1 | 0)
 *   HAS_REQD_SG_ATTRS   intel_/qcom_reqd_sub_group_size may be used (1 | 0)
 *   HAS_WORD_SHUFFLE    SG_MODE 4 may be used: word_shuffle_xor over warps of 32 consecutive
 *                       work-items, NVIDIA OpenCL's inline PTX (1 | 0: CUDA has sub-group
 *                       shuffles of any type, SG_MODE 1/2)
 *   HAS_LANE_SHUFFLE    sub_group_shuffle(v, l) (a value from lane l, l chosen per lane, as
 *                       cl_khr_subgroup_shuffle's) may be used (0 | 1: __shfl_sync)
 *   HAS_SUB_GROUP_VOTE  sub_group_any may be used in every sub-group mode, shuffle modes too
 *                       (0 | 1: __any_sync)
 *   HALF_EXP(x)         exp(x) for a result that is rounded to float16 (exp | __expf: ex2.approx
 *                       of x * log2(e), relative error below 2^-21 + |x| * 2^-24 where half's
 *                       rounding is 2^-11; CUDA's accurate expf was ~8 instructions an element
 *                       and left float16 softmax rows of 16384 issue-bound on an H100)
 *   LOAD_RUNS_TOGETHER  register-cached rows load all of a lane's runs before converting any
 *                       (0 | 1: row_common.h's load_runs; a half run converted in the branch
 *                       that loaded it held the next load back, one memory latency a run)
 *   HAS_VEC_MATH        built-in math on vector types (exp of a float16 vector) may be used
 *                       (1 | 0: CUDA has no vector types of more than four; its lanes are
 *                       scalar anyway)
 *   HAS_LDEXP_EVERYWHERE  ldexp links at every width (0: frexp_walk.h builds its own powers of
 *                       two, see the OpenCL header | 1: CUDA's ldexp; the built powers cost an
 *                       H100's cumprod of rows that are all walked 8 %)
 *   HAS_GROUP_PROGRESS  a work-group may spin on flags that earlier work-groups (by TICKET
 *                       order) set (0: OpenCL promises no progress between work-groups | 1)
 *   TICKET(p)           atomic increment of the uint at p, returning the old value
 *                       (atomic_inc | atomicAdd)
 *   PUBLISH_FLAG(p, v)  store the uint flag v at p after this work-item's earlier writes
 *                       (a fence and a volatile store | st.release.gpu)
 *   OBSERVE_FLAG(p)     load the uint flag at p before this work-item's later reads
 *                       (a volatile load and a fence | ld.acquire.gpu); both meaningful
 *                       only where HAS_GROUP_PROGRESS
 *   POLL_PAUSE()        back off between two polls of a flag (nothing | __nanosleep)
 *   STAGE_COPY16(d, p)  copy the 16 bytes at global p (16-byte aligned) to local d, perhaps
 *                       in the background (a plain copy | cp.async.cg on sm_80+)
 *   STAGE_COMMIT()      close this work-item's batch of STAGE_COPY16s (nothing | commit_group)
 *   STAGE_WAIT(n)       wait until at most n of this work-item's batches are in flight; its
 *                       own copies are then readable by it (nothing | cp.async.wait_group n)
 *   HAS_STAGE_COPY      STAGE_COPY16 runs in the background (0 | 1 on sm_80+)
 *   PART_BARRIER(id, n) barrier number id (1-15) of the n work-items (whole sub-groups) that
 *                       call it, local memory ordered among them (CUDA only: bar.sync id, n;
 *                       the OpenCL dialect has none, and row_scan.cl uses it only where
 *                       HAS_GROUP_PROGRESS)
 *   LOCAL_VLOAD_ARRAY(n, p, d), LOCAL_VLOAD_HALF_ARRAY(n, p, d)  VLOAD_ARRAY from local memory
 */
#ifndef CL_DIALECT_CUDA_H
#define CL_DIALECT_CUDA_H

/* ---- address spaces, qualifiers -------------------------------------------------------- */
#define __kernel extern "C" __global__
#define __global
#define __local __shared__
#define LOCAL_PTR
#define restrict __restrict__
#define inline __device__ __forceinline__
/* COLD_INLINE: a function only rare data reach, kept out of the kernel's hot code */
#define COLD_INLINE __device__ __noinline__

/* ---- types ----------------------------------------------------------------------------- */
/* These match glibc's own typedefs (seen by nvcc's host pass), so both may coexist. */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned short half; /* storage only: vload_half / vstore_half convert */
static_assert(sizeof(long) == 8 && sizeof(ulong) == 8, "OpenCL long is 64-bit: needs an LP64 target");
static_assert((char)-1 < 0, "OpenCL char is signed: this host ABI makes char unsigned");

/* ---- work-item functions (1-D launches) ------------------------------------------------ */
__device__ __forceinline__ uint cl_dim_(const uint3 v, uint d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }
__device__ __forceinline__ ulong cl_dim_(const dim3 v, uint d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }
#define get_local_id(d) ((ulong)cl_dim_(threadIdx, (d)))
#define get_group_id(d) ((ulong)cl_dim_(blockIdx, (d)))
#define get_local_size(d) ((ulong)cl_dim_(blockDim, (d)))
#define get_num_groups(d) ((ulong)cl_dim_(gridDim, (d)))
#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))
#define get_global_size(d) (get_num_groups(d) * get_local_size(d))
#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2
#define barrier(flags) __syncthreads()

/* ---- sub-groups are warps -------------------------------------------------------------- */
#define CL_FULL_MASK_ 0xffffffffu
#define get_sub_group_size() 32u
#define get_max_sub_group_size() 32u
#define get_sub_group_local_id() ((uint)threadIdx.x & 31u)
#define get_sub_group_id() ((uint)threadIdx.x >> 5)
#define sub_group_any(p) __any_sync(CL_FULL_MASK_, (p))
template <class T> __device__ __forceinline__ T sub_group_shuffle_xor(T v, uint m) {
    return __shfl_xor_sync(CL_FULL_MASK_, v, (int)m);
}
/* Every lane must end with the same value, as OpenCL's built-ins return one result to the
 * whole sub-group: callers branch on it (reduce_rows.cl's compensated sg_reduce tests the
 * sub-group's max |s|). A butterfly gives that only with a commutative step; the plain
 * `o > v ? o : v` is not one with a NaN (a lane holding the NaN keeps it, its partner drops
 * it), and a warp split on such a max hung the H100 in __shfl_xor_sync (norm1 of a 3 x 4099
 * float32 row holding a NaN). So a NaN wins in either order; which NaN a kernel reports stays
 * its own business (reduce_rows.cl adds sub_group_any(isnan(v))). */
#define CL_SG_BUTTERFLY_(v, op)                                     \
    _Pragma("unroll") for (int m_ = 16; m_ > 0; m_ >>= 1) {        \
        const T o_ = __shfl_xor_sync(CL_FULL_MASK_, v, m_);         \
        v = op;                                                     \
    }                                                               \
    return v
template <class T> __device__ __forceinline__ T sub_group_reduce_add(T v) { CL_SG_BUTTERFLY_(v, v + o_); }
template <class T> __device__ __forceinline__ T sub_group_reduce_max(T v) { CL_SG_BUTTERFLY_(v, (o_ > v || o_ != o_) ? o_ : v); }
template <class T> __device__ __forceinline__ T sub_group_reduce_min(T v) { CL_SG_BUTTERFLY_(v, (o_ < v || o_ != o_) ? o_ : v); }
/* Exclusive prefix sum over the warp: Hillis-Steele inclusive steps, then one shift, so the
 * float result is a sum of the lower lanes' values (never inclusive - own, which rounds). */
template <class T> __device__ __forceinline__ T sub_group_scan_exclusive_add(T v) {
    const uint lane = (uint)threadIdx.x & 31u;
    _Pragma("unroll") for (uint d = 1; d < 32; d <<= 1) {
        const T o = __shfl_up_sync(CL_FULL_MASK_, v, d);
        if (lane >= d) {
            v += o;
        }
    }
    const T before = __shfl_up_sync(CL_FULL_MASK_, v, 1);
    return lane == 0 ? (T)0 : before;
}
template <class T> __device__ __forceinline__ T sub_group_broadcast(T v, uint l) {
    return __shfl_sync(CL_FULL_MASK_, v, (int)l);
}
/* the same with l chosen per lane (cl_khr_subgroup_shuffle's sub_group_shuffle) */
template <class T> __device__ __forceinline__ T sub_group_shuffle(T v, uint l) {
    return __shfl_sync(CL_FULL_MASK_, v, (int)l);
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 /* one instruction for 32-bit integers */
template <> __device__ __forceinline__ int sub_group_reduce_add<int>(int v) { return __reduce_add_sync(CL_FULL_MASK_, v); }
template <> __device__ __forceinline__ int sub_group_reduce_max<int>(int v) { return __reduce_max_sync(CL_FULL_MASK_, v); }
template <> __device__ __forceinline__ int sub_group_reduce_min<int>(int v) { return __reduce_min_sync(CL_FULL_MASK_, v); }
template <> __device__ __forceinline__ uint sub_group_reduce_add<uint>(uint v) { return __reduce_add_sync(CL_FULL_MASK_, v); }
template <> __device__ __forceinline__ uint sub_group_reduce_max<uint>(uint v) { return __reduce_max_sync(CL_FULL_MASK_, v); }
template <> __device__ __forceinline__ uint sub_group_reduce_min<uint>(uint v) { return __reduce_min_sync(CL_FULL_MASK_, v); }
#endif

/* ---- math and relational built-ins ----------------------------------------------------- */
/* Written out rather than taken from CUDA's math library, whose overload sets differ
 * between NVRTC and nvcc; each follows the OpenCL C definition for the types we use. */
template <class T> __device__ __forceinline__ bool cl_isnan_(T x) { return x != x; }
/* integers too (unsigned: x itself); "x > 0", as "x < 0" is a pointless-comparison warning for unsigned */
template <class T> __device__ __forceinline__ T cl_fabs_(T x) { return x > (T)0 ? x : (T)((T)0 - x); }
template <> __device__ __forceinline__ float cl_fabs_<float>(float x) {
    return __int_as_float(__float_as_int(x) & 0x7fffffff); /* clears the sign of -0 and NaN too */
}
template <> __device__ __forceinline__ double cl_fabs_<double>(double x) {
    return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffLL);
}
/* fmax/fmin: a NaN argument loses to a number (OpenCL C, IEEE maxNum) */
template <class T> __device__ __forceinline__ T cl_fmax_(T a, T b) { return (b != b || a > b) ? a : b; }
template <class T> __device__ __forceinline__ T cl_fmin_(T a, T b) { return (b != b || a < b) ? a : b; }
/* float and double: CUDA's own, one max.f32 / min.f32 (PTX gives them the same NaN rule);
 * the select above is three instructions, which float16 rows' hot loops felt */
template <> __device__ __forceinline__ float cl_fmax_<float>(float a, float b) { return fmaxf(a, b); }
template <> __device__ __forceinline__ float cl_fmin_<float>(float a, float b) { return fminf(a, b); }
template <> __device__ __forceinline__ double cl_fmax_<double>(double a, double b) { return ::fmax(a, b); }
template <> __device__ __forceinline__ double cl_fmin_<double>(double a, double b) { return ::fmin(a, b); }
template <class T> __device__ __forceinline__ T cl_max_(T a, T b) { return a > b ? a : b; }
template <class T> __device__ __forceinline__ T cl_min_(T a, T b) { return a < b ? a : b; }
/* isfinite: x - x is 0 for finite x, NaN for inf and NaN */
template <class T> __device__ __forceinline__ bool cl_isfinite_(T x) { return x - x == (T)0; }
template <class T> __device__ __forceinline__ bool cl_isinf_(T x) { return x == x && x - x != (T)0; }
/* clamp of floats: fmin(fmax(x, lo), hi), as OpenCL C defines it */
template <class T> __device__ __forceinline__ T cl_clamp_(T x, T lo, T hi) { return cl_fmin_(cl_fmax_(x, lo), hi); }
__device__ __forceinline__ float cl_rint_(float x) { return rintf(x); } /* half to even */
__device__ __forceinline__ double cl_rint_(double x) { return ::rint(x); }
__device__ __forceinline__ float cl_rsqrt_(float x) { return rsqrtf(x); }
__device__ __forceinline__ double cl_rsqrt_(double x) { return ::rsqrt(x); }
#define isnan(x) cl_isnan_(x)
#define isfinite(x) cl_isfinite_(x)
#define isinf(x) cl_isinf_(x)
#define clamp(x, lo, hi) cl_clamp_((x), (lo), (hi))
#define rint(x) cl_rint_(x)
#define rsqrt(x) cl_rsqrt_(x)
#define fabs(x) cl_fabs_(x)
#define fmax(a, b) cl_fmax_((a), (b))
#define fmin(a, b) cl_fmin_((a), (b))
#define max(a, b) cl_max_((a), (b))
#define min(a, b) cl_min_((a), (b))
#define select(a, b, c) ((c) ? (b) : (a)) /* scalar select */
/* as_type reinterpretation of 32- and 64-bit scalars (OpenCL's as_uint / as_int / as_float,
 * as_ulong / as_long / as_double) */
template <class D, class S> __device__ __forceinline__ D cl_bitcast_(const S s) {
    static_assert(sizeof(D) == sizeof(S), "as_type needs equal sizes");
    D d;
    memcpy(&d, &s, sizeof(D));
    return d;
}
#define as_uint(x) cl_bitcast_<uint>(x)
#define as_int(x) cl_bitcast_<int>(x)
#define as_float(x) cl_bitcast_<float>(x)
#define as_ulong(x) cl_bitcast_<ulong>(x)
#define as_long(x) cl_bitcast_<long>(x)
#define as_double(x) cl_bitcast_<double>(x)

/* ---- constants the planner's IDENTITY values name -------------------------------------- */
#undef INFINITY
#undef NAN
#define INFINITY (__int_as_float(0x7f800000))
#define NAN (__int_as_float(0x7fffffff))
#undef INT_MAX
#undef INT_MIN
#undef UINT_MAX
#undef LONG_MAX
#undef LONG_MIN
#undef ULONG_MAX
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295u
#define LONG_MAX 9223372036854775807L
#define LONG_MIN (-LONG_MAX - 1L)
#define ULONG_MAX 18446744073709551615UL

/* ---- half ------------------------------------------------------------------------------ */
__device__ __forceinline__ float cl_half_to_float_(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short cl_float_to_half_(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); /* round to nearest even, as vstore_half */
    return h;
}
#define vload_half(off, p) cl_half_to_float_((p)[off])
#define vstore_half(v, off, p) ((p)[off] = cl_float_to_half_((float)(v)))

/* ---- portable vocabulary: CUDA meanings ------------------------------------------------ */
#define KERNEL_WG_SIZE(n) __launch_bounds__((n), MIN_BLOCKS)
#define LOAD_RO(p) __ldg(p)
#define LOAD_RO_HALF(p) cl_half_to_float_(__ldg(p))
#define UNROLL_LOOP _Pragma("unroll")
#define NO_UNROLL _Pragma("unroll 1")
/* the read-only run walks of the row ops (row_common.h LANE_WALK_RUNS): four runs' loads in
 * flight a thread; H100, softmax float16 rows of 4194304 and 2^28 +2.4 %, layer_norm 4096 x 65536 +4.5 % */
#define UNROLL_READ_WALK _Pragma("unroll 4")
#define UNROLL_DEFAULT 4
#define FIXED_SG_SIZE 32
#define HAS_QCOM_SHUFFLE 0
#define HAS_REQD_SG_ATTRS 0
#define HAS_WORD_SHUFFLE 0
#define HAS_VEC_MATH 0
#define HAS_LDEXP_EVERYWHERE 1
#define HALF_EXP(x) __expf(x)
#define LOAD_RUNS_TOGETHER 1
#define HAS_LANE_SHUFFLE 1
#define HAS_SUB_GROUP_VOTE 1
/* Work-groups may wait on earlier ones (row_scan.cl's decoupled look-back): a block that took
 * a ticket from TICKET has started, and CUDA runs a started block to its end, so a block
 * spinning on the flags of lower tickets waits on blocks that are running or done.
 * PUBLISH_FLAG is a release store (the thread's earlier writes are visible to whoever sees the
 * flag), OBSERVE_FLAG an acquire load (sm_70+). They replace __threadfence() around plain
 * flags: its membar.gl (a sequentially consistent fence) held the look-back to ~40 % of an
 * H200's copy. */
#define HAS_GROUP_PROGRESS 1
#define TICKET(p) atomicAdd((p), 1u)
__device__ __forceinline__ void cl_publish_flag_(uint *p, uint v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint cl_observe_flag_(const uint *p) {
    uint v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
#define PUBLISH_FLAG(p, v) cl_publish_flag_((p), (v))
#define OBSERVE_FLAG(p) cl_observe_flag_(p)
#ifndef POLL_PAUSE_NS
#define POLL_PAUSE_NS 100
#endif
#define POLL_PAUSE() __nanosleep(POLL_PAUSE_NS)
/* Copies that land in shared memory without passing through registers (sm_80+): a block
 * can keep its next tiles' loads in flight while it waits (row_scan.cl's look-back). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HAS_STAGE_COPY 1
__device__ __forceinline__ void cl_stage_copy16_(void *d, const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(d);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(s), "l"(p) : "memory");
}
#define STAGE_COPY16(d, p) cl_stage_copy16_((d), (p))
#define STAGE_COMMIT() asm volatile("cp.async.commit_group;" : : : "memory")
#define STAGE_WAIT(n) asm volatile("cp.async.wait_group %0;" : : "n"(n) : "memory")
#else
#define HAS_STAGE_COPY 0
#define STAGE_COPY16(d, p) (*reinterpret_cast<uint4 *>(d) = *reinterpret_cast<const uint4 *>(p))
#define STAGE_COMMIT()
#define STAGE_WAIT(n)
#endif
/* A barrier of some of a block's warps (barrier 0 is __syncthreads'): row_scan.cl's look-back
 * fetchers meet while its first warp spins on flags. */
#define PART_BARRIER(id, n) asm volatile("bar.sync %0, %1;" : : "r"((unsigned)(id)), "r"((unsigned)(n)) : "memory")

/* N elements of T as words of min(16, N * sizeof(T)) bytes, the widest load CUDA has. */
template <class T, int N> struct cl_vload_ {
    static constexpr int BYTES = N * (int)sizeof(T);
    static constexpr int WORD = BYTES >= 16 ? 16 : BYTES;
    static constexpr int WORDS = BYTES / WORD;
};
template <int B> struct cl_word_;
template <> struct cl_word_<16> { typedef uint4 type; };
template <> struct cl_word_<8> { typedef uint2 type; };
template <> struct cl_word_<4> { typedef unsigned int type; };
template <> struct cl_word_<2> { typedef unsigned short type; };
template <> struct cl_word_<1> { typedef unsigned char type; };

template <int N, class T> __device__ __forceinline__ uint cl_vload_head_(const T *p) {
    const uint word = cl_vload_<T, N>::WORD;
    const uint mis = (uint)(reinterpret_cast<unsigned long long>(p) % word) / (uint)sizeof(T);
    return mis ? word / (uint)sizeof(T) - mis : 0u;
}
template <int N, class T> __device__ __forceinline__ bool cl_vload_aligned_(const T *p) {
    return reinterpret_cast<unsigned long long>(p) % cl_vload_<T, N>::WORD == 0;
}
/* p must be aligned (cl_vload_aligned_); D is T, or float for half (H). */
/* A global read-only word kept in L2 ahead of streamed data: an L2 evict_last policy (sm_80+),
 * as Triton gives loads marked evict_last. For a weight that every row re-reads while the rows
 * stream past it (H100, float16 64 x 4194304 rms_norm's write: an 8 MB weight, 1 GB of rows),
 * a probe's chunked write walk took 401 us with __ldg and 389 with this; a flat one 425 -> 363
 * (benchmarks/param_keep_h100_2026-11-28/write_probe.py); row_norm.cl's split write launch
 * 390-392 -> 381-383 us, whole rows level. Words under 4 bytes: __ldg. */
template <class W> __device__ __forceinline__ W cl_load_keep_(const W *p) { return __ldg(p); }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* asm volatile: a plain asm statement has no side effects for the compiler, which may then
 * run it ahead of the branch that guards it. row_norm.cl's param_run takes these loads only
 * where the weight is aligned (else element loads); nvcc ran one anyway for float16
 * layer_norm rows of 992-1000 (register rows, 32 lanes) with a float32 weight one element off
 * 16 bytes, and the kernel died with a misaligned address (compute-sanitizer: a 16-byte read
 * 4 bytes past an alignment inside the weight's allocation; test_vector_runs_aligned_and_not,
 * 2026-11-28). */
#define CL_KEEP_POLICY_ ".reg .b64 pol_;\n createpolicy.fractional.L2::evict_last.b64 pol_, 1.0;\n "
template <> __device__ __forceinline__ uint4 cl_load_keep_<uint4>(const uint4 *p) {
    uint4 v;
    asm volatile("{\n " CL_KEEP_POLICY_ "ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol_;\n}"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
template <> __device__ __forceinline__ uint2 cl_load_keep_<uint2>(const uint2 *p) {
    uint2 v;
    asm volatile("{\n " CL_KEEP_POLICY_ "ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], pol_;\n}"
        : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
template <> __device__ __forceinline__ unsigned int cl_load_keep_<unsigned int>(const unsigned int *p) {
    unsigned int v;
    asm volatile("{\n " CL_KEEP_POLICY_ "ld.global.L1::evict_last.L2::cache_hint.u32 %0, [%1], pol_;\n}" : "=r"(v) : "l"(p));
    return v;
}
#undef CL_KEEP_POLICY_
#endif
/* G: 0 local (shared) memory, read plainly; 1 global read-only data (__ldg, the non-coherent
 * cache); 2 global read-only data kept in L2 (cl_load_keep_); 3 global data read for the last
 * time (__ldcs, ld.global.cs: evicted first) */
template <int N, bool H, int G, class T, class D> __device__ __forceinline__ void cl_vload_words_(const T *p, D *d) {
    typedef typename cl_word_<cl_vload_<T, N>::WORD>::type word_t;
    union {
        word_t w[cl_vload_<T, N>::WORDS];
        T e[N];
    } u;
    _Pragma("unroll") for (int j = 0; j < cl_vload_<T, N>::WORDS; ++j) {
        const word_t *w = reinterpret_cast<const word_t *>(p) + j;
        u.w[j] = G == 3 ? __ldcs(w) : G == 2 ? cl_load_keep_(w) : G == 1 ? __ldg(w) : *w;
    }
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
        d[j] = H ? (D)cl_half_to_float_((unsigned short)u.e[j]) : (D)u.e[j];
    }
}
#define LOCAL_VLOAD_ARRAY(n, p, d) cl_vload_words_<(n), false, 0>((p), (d))
#define LOCAL_VLOAD_HALF_ARRAY(n, p, d) cl_vload_words_<(n), true, 0>((p), (d))
#define VLOAD_HEAD(p, n) cl_vload_head_<(n)>(p)
#define VLOAD_ALIGNED(p, n) cl_vload_aligned_<(n)>(p)
#define VLOAD_ARRAY(n, p, d) cl_vload_words_<(n), false, 1>((p), (d))
#define VLOAD_HALF_ARRAY(n, p, d) cl_vload_words_<(n), true, 1>((p), (d))
#define VLOAD_KEEP_ARRAY(n, p, d) cl_vload_words_<(n), false, 2>((p), (d))
#define VLOAD_KEEP_HALF_ARRAY(n, p, d) cl_vload_words_<(n), true, 2>((p), (d))
#define VLOAD_LAST_ARRAY(n, p, d) cl_vload_words_<(n), false, 3>((p), (d))
#define VLOAD_LAST_HALF_ARRAY(n, p, d) cl_vload_words_<(n), true, 3>((p), (d))
/* p must be aligned (cl_vload_aligned_); S is T, or float for half (H). nvcc 12-13 lower
 * this union (elements in, words out) to element or 4-byte stores (st.global.v2.u16 x4 for
 * 8 halves, st.global.f32 x4 for 4 floats); VSTORE_WIDE below gives one 16-byte store. */
template <int N, bool H, class S, class T> __device__ __forceinline__ void cl_vstore_array_(const S *d, T *p) {
    typedef typename cl_word_<cl_vload_<T, N>::WORD>::type word_t;
    union {
        word_t w[cl_vload_<T, N>::WORDS];
        T e[N];
    } u;
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
        u.e[j] = H ? (T)cl_float_to_half_((float)d[j]) : (T)d[j];
    }
    _Pragma("unroll") for (int j = 0; j < cl_vload_<T, N>::WORDS; ++j) {
        reinterpret_cast<word_t *>(p)[j] = u.w[j];
    }
}
/* VSTORE_WIDE: the elements packed into 32-bit words and stored as uint4 / uint2 / uint
 * (st.global.v4.u32 for 8 halves or 4 floats: one store instruction per 16 bytes). */
template <class T> __device__ __forceinline__ unsigned long long cl_bits_(const T v) {
    /* integer types (half is unsigned short): the low sizeof(T) bytes, no sign extension */
    return sizeof(T) >= 8 ? (unsigned long long)v : (unsigned long long)v & ((1ull << (8 * sizeof(T))) - 1ull);
}
__device__ __forceinline__ unsigned long long cl_bits_(const float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long cl_bits_(const double v) {
    return (unsigned long long)__double_as_longlong(v);
}
/* one word stored: st.global.cs (CS, evicted first) or st.global.wb */
template <bool CS, class W> __device__ __forceinline__ void cl_store_word_(W *p, const W v) {
    if constexpr (CS) {
        __stcs(p, v);
    } else {
        __stwb(p, v);
    }
}
template <int N, bool H, class S, class T, bool CS = false> __device__ __forceinline__ void cl_vstore_wide_(const S *d, T *p) {
    constexpr int BYTES = cl_vload_<T, N>::BYTES;
    constexpr int SIZE = (int)sizeof(T);
    if constexpr (BYTES < 4) {
        _Pragma("unroll") for (int j = 0; j < N; ++j) {
            p[j] = H ? (T)cl_float_to_half_((float)d[j]) : (T)d[j];
        }
    } else {
        unsigned int u[BYTES / 4];
        _Pragma("unroll") for (int k = 0; k < BYTES / 4; ++k) {
            u[k] = 0u;
        }
        _Pragma("unroll") for (int j = 0; j < N; ++j) {
            const T e = H ? (T)cl_float_to_half_((float)d[j]) : (T)d[j];
            const unsigned long long b = cl_bits_(e);
            if constexpr (SIZE >= 4) {
                _Pragma("unroll") for (int m = 0; m < SIZE / 4; ++m) {
                    u[j * (SIZE / 4) + m] = (unsigned int)(b >> (32 * m));
                }
            } else {
                u[j * SIZE / 4] |= (unsigned int)b << (8 * ((j * SIZE) % 4));
            }
        }
        constexpr int WORD = cl_vload_<T, N>::WORD;
        _Pragma("unroll") for (int k = 0; k < BYTES / WORD; ++k) {
            const unsigned int *w = u + k * (WORD / 4);
            if constexpr (WORD == 16) {
                cl_store_word_<CS>(reinterpret_cast<uint4 *>(p) + k, make_uint4(w[0], w[1], w[2], w[3]));
            } else if constexpr (WORD == 8) {
                cl_store_word_<CS>(reinterpret_cast<uint2 *>(p) + k, make_uint2(w[0], w[1]));
            } else {
                cl_store_word_<CS>(reinterpret_cast<unsigned int *>(p) + k, w[0]);
            }
        }
    }
}
#define VSTORE_ARRAY(n, d, p) cl_vstore_array_<(n), false>((d), (p))
#define VSTORE_HALF_ARRAY(n, d, p) cl_vstore_array_<(n), true>((d), (p))
#define VSTORE_WIDE(n, d, p) cl_vstore_wide_<(n), false>((d), (p))
#define VSTORE_HALF_WIDE(n, d, p) cl_vstore_wide_<(n), true>((d), (p))
/* the same, st.global.cs (evicted first): rows written once that should not push the input's
 * lines out of L2 (row_common.h STREAM_WRITE) */
#define VSTORE_WIDE_STREAM(n, d, p) cl_vstore_wide_<(n), false, ACC_T, OUT_T, true>((d), (p))
#define VSTORE_HALF_WIDE_STREAM(n, d, p) cl_vstore_wide_<(n), true, ACC_T, OUT_T, true>((d), (p))

#endif /* CL_DIALECT_CUDA_H */
