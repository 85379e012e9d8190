/* reduce_rows.cu: CUDA twin of cl_kernels/reduce_rows.cl. Reduce each contiguous row of a
 * (rows, row_len) array to one value.
 *
 * Same algorithm and macro contract as the OpenCL kernel (read that file's header first):
 * a block of WG_SIZE threads is cut into teams of LANES threads; a team reduces one row
 * (or, with SPLIT > 1, one chunk of a row) at a time and the teams walk the rows with a
 * grid stride. LANES picks the strategy:
 *   LANES <  32        several rows per warp (masked xor butterfly inside the team)
 *   LANES == 32        one warp per row
 *   LANES >  32        one block per row (warp partials through shared memory)
 * With SG_MODE == SG_LOCAL teams reduce in shared memory (a check of the warp paths).
 *
 * The sub-group is the warp: SG_SIZE must be 32. SG_MODE 1 ("builtin") uses
 * __reduce_{add,max,min}_sync for 32-bit integer accumulators on sm_80+ and the
 * __shfl_xor_sync butterfly otherwise; SG_MODE 2 ("shuffle_khr") is the butterfly.
 *
 * Differences from the .cl file, all invisible to callers:
 *  - loads of VEC elements are 16-byte (or VEC * sizeof(IN_T) byte) words, which need
 *    alignment that OpenCL's vloadn does not: each row (chunk) starts with a scalar head
 *    up to the first aligned address, so any row start and any row_len are exact;
 *  - the vector loop is unrolled UNROLL times (optional macro, default 4) so several
 *    loads are in flight per thread;
 *  - OpenCL type names in IN_T / ACC_T / OUT_T are mapped by typedefs in a namespace
 *    (char -> signed char, long -> long long, half -> 16-bit storage converted with
 *    cvt.f32.f16 / cvt.rn.f16.f32), so no CUDA header is needed (nvcc or NVRTC alike).
 *
 * Required macros (see cl_kernels/README.md): one of OP_SUM, OP_PROD, OP_MAX, OP_MIN,
 * OP_NANMAX, OP_NANMIN; MAP, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT, ACC_BYTES, IDENTITY, WG_SIZE,
 * LANES, VEC, SPLIT, SG_MODE, SG_SIZE, REQD_SG, FINALIZE, IN_HALF, OUT_HALF.
 * CUDA-only, optional: UNROLL (vector loads in flight per thread, default 4), MIN_BLOCKS
 * (resident blocks per SM asked of the register allocator, default 1).
 *
 * Entries: extern "C" reduce_rows(in, in_offset, out, out_offset, n_rows, row_len,
 * row_stride, chunk_len, mean_count) and reduce_cols(in, in_offset, out, out_offset, outer,
 * k_len, inner, outer_stride, k_stride, chunk_len, count), offsets and sizes as unsigned
 * 64-bit; launch with blockDim.x == WG_SIZE and any gridDim.x (grid stride).
 */

#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3

#define MAP_NONE 0
#define MAP_ABS 1
#define MAP_SQUARE 2
#define MAP_NONZERO 3
#define MAP_NOTNAN 4
#define MAP_NAN_TO_ZERO 5
#define MAP_ONE 6
#define FIN_NONE 0
#define FIN_MEAN 1
#define FIN_SQRT 2

#if !defined(OP_SUM) && !defined(OP_PROD) && !defined(OP_MAX) && !defined(OP_MIN) && !defined(OP_NANMAX) && !defined(OP_NANMIN)
#error "define one of OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_NANMAX, OP_NANMIN"
#endif
#ifndef MAP
#error "MAP (0 none, 1 abs, 2 square, 3 nonzero, 4 not-nan, 5 nan-to-zero, 6 one) is required"
#endif
#ifndef IN_T
#error "IN_T (element type read) is required"
#endif
#ifndef ACC_T
#error "ACC_T (accumulator type) is required"
#endif
#ifndef OUT_T
#error "OUT_T (element type written) is required"
#endif
#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (0/1) is required"
#endif
#ifndef ACC_BYTES
#error "ACC_BYTES (sizeof(ACC_T)) is required"
#endif
#ifndef IDENTITY
#error "IDENTITY (neutral value of the op in ACC_T) is required"
#endif
#ifndef WG_SIZE
#error "WG_SIZE is required"
#endif
#ifndef LANES
#error "LANES (threads per row) is required"
#endif
#ifndef VEC
#error "VEC (elements per vector load: 1, 2, 4, 8, 16) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row, 1 = no split) is required"
#endif
#ifndef SG_MODE
#error "SG_MODE (0 local, 1 builtin, 2 KHR shuffle, 3 qcom shuffle) is required"
#endif
#ifndef SG_SIZE
#error "SG_SIZE is required (any value with SG_MODE 0)"
#endif
#ifndef REQD_SG
#error "REQD_SG (0 none, 1 intel, 2 qcom half, 3 qcom full) is required"
#endif
#ifndef FINALIZE
#error "FINALIZE (0 none, 1 mean, 2 sqrt) is required"
#endif
#ifndef IN_HALF
#error "IN_HALF (0/1) is required"
#endif
#ifndef OUT_HALF
#error "OUT_HALF (0/1) is required"
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if WG_SIZE > 1024 || (WG_SIZE % 32) != 0
#error "WG_SIZE must be a multiple of 32 and at most 1024 on CUDA"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 1, 2, 4, 8 or 16"
#endif
#if UNROLL < 1 || UNROLL > 8
#error "UNROLL must be 1..8"
#endif
#if SG_MODE == SG_SHUFFLE_QCOM
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no CUDA meaning: use 1 or 2"
#endif
#if SG_MODE != SG_LOCAL && SG_SIZE != 32
#error "CUDA sub-groups are warps: SG_SIZE must be 32"
#endif
#if REQD_SG != 0
#error "REQD_SG must be 0 on CUDA (the warp width is fixed)"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#if SG_MODE == SG_BUILTIN && (defined(OP_PROD) || defined(OP_NANMAX) || defined(OP_NANMIN))
#error "no sub-group built-in for prod, and built-in max/min leave NaN unspecified: use a shuffle mode"
#endif
#if FINALIZE != FIN_NONE && FINALIZE != FIN_MEAN && FINALIZE != FIN_SQRT
#error "reduce_rows finalizes with 0 (none), 1 (mean) or 2 (sqrt)"
#endif

/* Constants the planner's IDENTITY values name (OpenCL C built-ins, absent from NVRTC). */
#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))  /* nanmax/nanmin identity: fmax/fmin skip it */
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef INT_MIN
#define INT_MIN (-INT_MAX - 1)
#endif
#ifndef UINT_MAX
#define UINT_MAX 4294967295u
#endif
/* OpenCL long is 64-bit everywhere; the host's LONG_* (32-bit on some ABIs) must not leak in. */
#undef LONG_MAX
#undef LONG_MIN
#undef ULONG_MAX
#define LONG_MAX 9223372036854775807LL
#define LONG_MIN (-LONG_MAX - 1LL)
#define ULONG_MAX 18446744073709551615ULL

namespace clreduce_cuda {

/* OpenCL C scalar type names, inside this namespace so that glibc's own ulong/ushort/uint
 * typedefs (seen by nvcc's host pass) cannot clash. */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;
typedef unsigned short half; /* storage only; IN_HALF / OUT_HALF convert */

template <class T> struct cl_type { typedef T type; };
template <> struct cl_type<char> { typedef signed char type; }; /* OpenCL char is signed */
template <> struct cl_type<long> { typedef long long type; };   /* OpenCL long is 64-bit */

typedef cl_type<IN_T>::type in_t;
typedef cl_type<ACC_T>::type acc_t;
typedef cl_type<OUT_T>::type out_t;

static_assert(sizeof(acc_t) == ACC_BYTES, "ACC_BYTES does not match ACC_T");
static_assert(!IN_HALF || sizeof(in_t) == 2, "IN_HALF needs a 16-bit IN_T");
static_assert(!OUT_HALF || sizeof(out_t) == 2, "OUT_HALF needs a 16-bit OUT_T");

__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short float_to_half(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

/* ---- the op ------------------------------------------------------------------------ */
/* max/min propagate NaN like numpy: a NaN on either side wins. nanmax/nanmin drop NaN
 * (OpenCL's fmax/fmin): NaN only when both sides are. */
__device__ __forceinline__ acc_t combine(acc_t a, acc_t b) {
#if defined(OP_SUM)
    return a + b;
#elif defined(OP_PROD)
    return a * b;
#elif ACC_IS_FLOAT && defined(OP_NANMAX)
    return (b != b || a > b) ? a : b;
#elif ACC_IS_FLOAT && defined(OP_NANMIN)
    return (b != b || a < b) ? a : b;
#elif defined(OP_NANMAX)
    return a > b ? a : b;
#elif defined(OP_NANMIN)
    return a < b ? a : b;
#elif ACC_IS_FLOAT && defined(OP_MAX)
    return (a != a || a > b) ? a : b;
#elif ACC_IS_FLOAT && defined(OP_MIN)
    return (a != a || a < b) ? a : b;
#elif defined(OP_MAX)
    return a > b ? a : b;
#else
    return a < b ? a : b;
#endif
}

/* ---- element map: loaded value -> ACC_T --------------------------------------------- */
/* As in the .cl file, MAP runs on the loaded type (float for half input) before the
 * conversion to ACC_T, so "nonzero" sees 0.5 as nonzero even for an integer ACC_T. For
 * integer input, abs and square run after the conversion instead (no overflow of
 * |INT_MIN| or x*x in the input's width; the .cl file has no integer abs/square). */
#if IN_HALF
typedef float raw_t;
#else
typedef in_t raw_t;
#endif
template <class T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }
template <class T> __device__ __forceinline__ T abs_of(T x) { return x > (T)0 ? x : (T)((T)0 - x); }
template <> __device__ __forceinline__ float abs_of<float>(float x) {
    return __int_as_float(__float_as_int(x) & 0x7fffffff);
}
template <> __device__ __forceinline__ double abs_of<double>(double x) {
    return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffLL);
}
__device__ __forceinline__ acc_t map_to_acc(raw_t x) {
#if MAP == MAP_ABS || MAP == MAP_SQUARE
    constexpr bool RAW_IS_FLOAT = (raw_t)0.5 != (raw_t)0;
#endif
#if MAP == MAP_NONE
    return (acc_t)x;
#elif MAP == MAP_ABS
    return RAW_IS_FLOAT ? (acc_t)abs_of(x) : abs_of((acc_t)x);
#elif MAP == MAP_SQUARE
    if (RAW_IS_FLOAT) {
        return (acc_t)(x * x);
    }
    const acc_t v = (acc_t)x;
    return v * v;
#elif MAP == MAP_NONZERO
    return x != (raw_t)0 ? (acc_t)1 : (acc_t)0;
#elif MAP == MAP_NOTNAN
    return is_nan(x) ? (acc_t)0 : (acc_t)1;
#elif MAP == MAP_NAN_TO_ZERO
    return is_nan(x) ? (acc_t)0 : (acc_t)x;
#elif MAP == MAP_ONE
    return (acc_t)1;
#else
#error "unknown MAP"
#endif
}

__device__ __forceinline__ acc_t to_acc(in_t x) {
#if IN_HALF
    return map_to_acc(half_to_float((unsigned short)x));
#else
    return map_to_acc(x);
#endif
}

/* ---- loads ------------------------------------------------------------------------- */
/* A vector is VEC elements read as NWORDS words of WORD bytes (16 at most); rows are read
 * through the non-coherent path (the input is never written during the launch). */
__device__ __forceinline__ acc_t load1(const in_t *p) {
    return to_acc(__ldg(p));
}

#if VEC > 1
constexpr int VBYTES = VEC * (int)sizeof(in_t);
constexpr int WORD = VBYTES >= 16 ? 16 : VBYTES;
constexpr int NWORDS = VBYTES / WORD;
constexpr int ELEMS_PER_WORD = WORD / (int)sizeof(in_t);

template <int B> struct word_type;
template <> struct word_type<16> { typedef uint4 type; };
template <> struct word_type<8> { typedef uint2 type; };
template <> struct word_type<4> { typedef unsigned int type; };
template <> struct word_type<2> { typedef unsigned short type; };
template <> struct word_type<1> { typedef unsigned char type; };
typedef word_type<WORD>::type word_t;

/* p must be WORD-aligned. */
__device__ __forceinline__ void load_vec(const in_t *p, acc_t (&v)[VEC]) {
    union {
        word_t w[NWORDS];
        in_t e[VEC];
    } u;
#pragma unroll
    for (int j = 0; j < NWORDS; ++j) {
        u.w[j] = __ldg(reinterpret_cast<const word_t *>(p) + j);
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
        v[j] = to_acc(u.e[j]);
    }
}
#endif /* VEC > 1 */

/* Horizontal combine of a vector accumulator, in the .cl file's order. */
__device__ __forceinline__ acc_t hreduce(const acc_t (&v)[VEC]) {
#if VEC == 1
    return v[0];
#elif VEC == 2
    return combine(v[0], v[1]);
#else
    acc_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#if VEC == 4
        w[j] = v[j];
#elif VEC == 8
        w[j] = combine(v[j], v[j + 4]);
#else
        w[j] = combine(combine(v[j], v[j + 4]), combine(v[j + 8], v[j + 12]));
#endif
    }
    return combine(combine(w[0], w[1]), combine(w[2], w[3]));
#endif
}

/* ---- warp steps -------------------------------------------------------------------- */
#define FULL_MASK 0xffffffffu

/* Butterfly over aligned groups of `width` lanes: xor masks below `width` never leave the
 * group, so several rows can share one warp. Every lane ends with its group's value. */
template <int WIDTH>
__device__ __forceinline__ acc_t butterfly(acc_t v) {
#pragma unroll
    for (int m = WIDTH >> 1; m > 0; m >>= 1) {
        v = combine(v, __shfl_xor_sync(FULL_MASK, v, m));
    }
    return v;
}

__device__ __forceinline__ acc_t warp_reduce(acc_t v) {
#if SG_MODE == SG_BUILTIN && !ACC_IS_FLOAT && ACC_BYTES == 4 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#if defined(OP_SUM)
    return __reduce_add_sync(FULL_MASK, v);
#elif defined(OP_MAX)
    return __reduce_max_sync(FULL_MASK, v);
#else
    return __reduce_min_sync(FULL_MASK, v);
#endif
#else
    return butterfly<32>(v);
#endif
}

/* ---- the kernel -------------------------------------------------------------------- */
#define TEAMS (WG_SIZE / LANES)
#if SG_MODE == SG_LOCAL
#define SCRATCH_LEN WG_SIZE
#else
#define SCRATCH_LEN (WG_SIZE / 32)
#endif

/* One team's share of one row chunk: lane-strided vector loads after an aligned head,
 * then the scalar tail. */
__device__ __forceinline__ acc_t team_chunk(const in_t *__restrict__ p, ulong len, uint lane) {
    acc_t acc = IDENTITY;
#if VEC > 1
    /* scalar head up to the first WORD-aligned element */
    const uint mis = (uint)((reinterpret_cast<unsigned long long>(p) % WORD) / sizeof(in_t));
    ulong head = mis ? (ulong)(ELEMS_PER_WORD - mis) : 0;
    head = head < len ? head : len;
#pragma unroll 1
    for (ulong i = lane; i < head; i += LANES) {
        acc = combine(acc, load1(p + i));
    }
    p += head;
    len -= head;
    const ulong full = len - len % VEC;
    acc_t accv[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
        accv[j] = IDENTITY;
    }
    const ulong step = (ulong)LANES * VEC;
    ulong i = (ulong)lane * VEC;
    /* UNROLL independent loads in flight before the first combine */
#pragma unroll 1
    for (; i + (UNROLL - 1) * step < full; i += UNROLL * step) {
        acc_t t[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            load_vec(p + i + u * step, t[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                accv[j] = combine(accv[j], t[u][j]);
            }
        }
    }
#pragma unroll 1
    for (; i < full; i += step) {
        acc_t t[VEC];
        load_vec(p + i, t);
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            accv[j] = combine(accv[j], t[j]);
        }
    }
    acc = combine(acc, hreduce(accv));
#pragma unroll 1
    for (i = full + lane; i < len; i += LANES) {
        acc = combine(acc, load1(p + i));
    }
#else
    const ulong step = LANES;
    ulong i = lane;
#pragma unroll 1
    for (; i + (UNROLL - 1) * step < len; i += UNROLL * step) {
        acc_t t[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            t[u] = load1(p + i + u * step);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            acc = combine(acc, t[u]);
        }
    }
#pragma unroll 1
    for (; i < len; i += step) {
        acc = combine(acc, load1(p + i));
    }
#endif
    return acc;
}

extern "C" __global__ void __launch_bounds__(WG_SIZE, MIN_BLOCKS)
reduce_rows(const in_t *__restrict__ in, const ulong in_offset,
            out_t *__restrict__ out, const ulong out_offset,
            const ulong n_rows, const ulong row_len, const ulong row_stride,
            const ulong chunk_len, const ulong mean_count)
{
#if LANES > 1 && (SG_MODE == SG_LOCAL || LANES > 32)
    __shared__ acc_t scratch[SCRATCH_LEN];
#endif
    const uint lid = threadIdx.x;
    /* warps are threads 32k..32k+31, so teams of LANES <= 32 are aligned lane groups */
    const uint lane = lid % LANES;
    const uint team = lid / LANES;
    const ulong n_tasks = n_rows * SPLIT;
    const ulong task_stride = (ulong)gridDim.x * TEAMS;

    for (ulong base = (ulong)blockIdx.x * TEAMS; base < n_tasks; base += task_stride) {
        const ulong task = base + team;
        acc_t acc = IDENTITY;
        if (task < n_tasks) {
            const ulong row = task / SPLIT;
            const ulong start = (task % SPLIT) * chunk_len;
            const ulong stop = start + chunk_len < row_len ? start + chunk_len : row_len;
            const ulong len = stop > start ? stop - start : 0;
            acc = team_chunk(in + in_offset + row * row_stride + start, len, lane);
        }

#if LANES > 1
#if SG_MODE == SG_LOCAL
        scratch[lid] = acc;
        __syncthreads();
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) {
                scratch[lid] = combine(scratch[lid], scratch[lid + s]);
            }
            __syncthreads();
        }
        acc = scratch[lid];
#elif LANES < 32
        acc = butterfly<LANES>(acc);
#elif LANES == 32
        acc = warp_reduce(acc);
#else
        /* Block per row: each warp reduces, lane 0 parks the partial, the team's first warp
         * folds the partials (strided, so any LANES / 32 works). */
        acc = warp_reduce(acc);
        if ((lid & 31u) == 0) {
            scratch[lid >> 5] = acc;
        }
        __syncthreads();
        if (lane < 32) {
            /* uniform per warp: lane < 32 is exactly the team's first warp */
            acc_t part = IDENTITY;
            for (uint j = lane; j < LANES / 32; j += 32) {
                part = combine(part, scratch[team * (LANES / 32) + j]);
            }
            acc = warp_reduce(part);
        }
        __syncthreads();
#endif
#endif /* LANES > 1 */

        if (lane == 0 && task < n_tasks) {
#if FINALIZE == FIN_MEAN
            acc = acc / (acc_t)mean_count;
#elif FINALIZE == FIN_SQRT
            acc = (acc_t)sqrt((double)acc); /* correctly rounded for float too */
#endif
#if OUT_HALF
            out[out_offset + task] = float_to_half((float)acc);
#else
            out[out_offset + task] = (out_t)acc;
#endif
        }
    }
}

/* ---- the strided axis --------------------------------------------------------------- */
/* (outer, K, inner) with inner > 1: each thread owns VEC adjacent columns of one outer slice
 * (or of one K chunk of it, SPLIT > 1) and walks K, so at every k neighbouring threads read
 * neighbouring addresses. As in the .cl file, compiled beside reduce_rows; the row macros are
 * then given neutral values (LANES 1, SG_MODE 0). Vector loads need every k's address
 * WORD-aligned; otherwise (and for the last, partial block of columns) the thread reads its
 * columns one element at a time. Results and partials are laid out (outer, SPLIT or 1, inner). */
#if FINALIZE == FIN_MEAN
#define FINISH(a) ((a) / (acc_t)count)
#elif FINALIZE == FIN_SQRT
#define FINISH(a) ((acc_t)sqrt((double)(a)))
#else
#define FINISH(a) (a)
#endif

__device__ __forceinline__ void store_out(out_t *dst, acc_t a) {
#if OUT_HALF
    *dst = float_to_half((float)a);
#else
    *dst = (out_t)a;
#endif
}

extern "C" __global__ void __launch_bounds__(WG_SIZE, MIN_BLOCKS)
reduce_cols(const in_t *__restrict__ in, const ulong in_offset,
            out_t *__restrict__ out, const ulong out_offset,
            const ulong outer, const ulong k_len, const ulong inner,
            const ulong outer_stride, const ulong k_stride,
            const ulong chunk_len, const ulong count)
{
    const ulong blocks = (inner + VEC - 1) / VEC;
    const ulong n_items = outer * SPLIT * blocks;
    const ulong stride = (ulong)gridDim.x * blockDim.x;
    for (ulong item = (ulong)blockIdx.x * blockDim.x + threadIdx.x; item < n_items; item += stride) {
        const ulong task = item / blocks; /* outer * SPLIT + chunk */
        const ulong col = (item % blocks) * VEC;
        const ulong o = task / SPLIT;
        const ulong k0 = (task % SPLIT) * chunk_len;
        const ulong k1 = k0 + chunk_len < k_len ? k0 + chunk_len : k_len;
        const in_t *p = in + in_offset + o * outer_stride + col;
        out_t *dst = out + out_offset + task * inner + col;
#if VEC > 1
        if (col + VEC <= inner && reinterpret_cast<unsigned long long>(p) % WORD == 0 &&
            (k_stride * sizeof(in_t)) % WORD == 0) {
            acc_t acc[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                acc[j] = IDENTITY;
            }
            ulong k = k0;
#pragma unroll 1
            for (; k + (UNROLL - 1) < k1; k += UNROLL) {
                acc_t t[UNROLL][VEC];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    load_vec(p + (k + u) * k_stride, t[u]);
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        acc[j] = combine(acc[j], t[u][j]);
                    }
                }
            }
#pragma unroll 1
            for (; k < k1; ++k) {
                acc_t t[VEC];
                load_vec(p + k * k_stride, t);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    acc[j] = combine(acc[j], t[j]);
                }
            }
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                store_out(dst + j, FINISH(acc[j]));
            }
            continue;
        }
#endif
        for (ulong j = 0; j < VEC && col + j < inner; ++j) {
            acc_t acc = IDENTITY;
#pragma unroll 1
            for (ulong k = k0; k < k1; ++k) {
                acc = combine(acc, load1(p + k * k_stride + j));
            }
            store_out(dst + j, FINISH(acc));
        }
    }
}

} /* namespace clreduce_cuda */
