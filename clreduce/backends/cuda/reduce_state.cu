/* reduce_state.cu: CUDA twin of cl_kernels/reduce_state.cl. Reductions whose running value
 * is a small struct ("state"): var/std (Welford per lane, Chan's merge), argmax/argmin
 * (value + first index), logsumexp (running max + scaled sum), and scalar ops in the strided
 * case. Same entry points, macros and algorithm as the .cl file (read its header):
 *   reduce_rows_state  (ENTRY 1) rows, teams of LANES threads per row; LANES <= 32 merge
 *                      with an xor butterfly of __shfl_xor_sync (one per state field),
 *                      wider teams through shared memory, SG_MODE 0 in shared memory only;
 *   reduce_cols        (ENTRY 2) (outer, K, inner) with inner > 1, VEC adjacent columns per
 *                      thread walking K.
 * Both can write partial states (OUT_STATES) and read them back (IN_STATES).
 *
 * CUDA specifics, invisible to callers: OpenCL type names map through typedefs in a
 * namespace (char -> signed char, long -> long long, half -> 16-bit storage converted with
 * cvt), so no CUDA header is needed; rows are read with 16-byte loads after a scalar head up
 * to the first aligned address (the .cl file reads element by element); element indices
 * pushed into argmax/argmin states are exact whatever the order of loads.
 *
 * Required macros: ENTRY, OPK, IN_T, ACC_T, OUT_T, ACC_IS_FLOAT, ACC_BYTES, IN_HALF, OUT_HALF,
 * FINALIZE, IN_STATES, OUT_STATES, WG_SIZE, VEC, SPLIT; OPK_SCALAR: one OP_*, MAP, IDENTITY;
 * OPK_ARG: ARG_MAX or ARG_MIN, IDENTITY; ENTRY_ROWS: LANES, SG_MODE, SG_SIZE, REQD_SG.
 * Optional (CUDA only): MIN_BLOCKS (default 1).
 */

#define ENTRY_ROWS 1
#define ENTRY_COLS 2
#define OPK_SCALAR 0
#define OPK_WELFORD 1
#define OPK_ARG 2
#define OPK_LSE 3
#define FIN_NONE 0
#define FIN_MEAN 1
#define FIN_SQRT 2
#define FIN_VAR 3
#define FIN_STD 4
#define FIN_INDEX 5
#define FIN_LSE 6
#define MAP_NONE 0
#define MAP_ABS 1
#define MAP_SQUARE 2
#define MAP_NONZERO 3
#define MAP_NOTNAN 4
#define MAP_NAN_TO_ZERO 5
#define MAP_ONE 6
#define SG_LOCAL 0
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3

#ifndef ENTRY
#error "ENTRY (1 rows, 2 cols) is required"
#endif
#ifndef OPK
#error "OPK (0 scalar, 1 welford, 2 arg, 3 logsumexp) is required"
#endif
#if !defined(IN_T) || !defined(ACC_T) || !defined(OUT_T)
#error "IN_T, ACC_T and OUT_T are required"
#endif
#if !defined(ACC_IS_FLOAT) || !defined(ACC_BYTES)
#error "ACC_IS_FLOAT and ACC_BYTES are required"
#endif
#if !defined(IN_HALF) || !defined(OUT_HALF)
#error "IN_HALF and OUT_HALF (0/1) are required"
#endif
#ifndef FINALIZE
#error "FINALIZE (0 none, 1 mean, 2 sqrt, 3 var, 4 std, 5 index, 6 logsumexp) is required"
#endif
#if !defined(IN_STATES) || !defined(OUT_STATES)
#error "IN_STATES and OUT_STATES (0/1) are required"
#endif
#if !defined(WG_SIZE) || !defined(VEC) || !defined(SPLIT)
#error "WG_SIZE, VEC and SPLIT are required"
#endif
#if OPK == OPK_SCALAR && !defined(MAP)
#error "OPK_SCALAR needs MAP"
#endif
#if (OPK == OPK_SCALAR || OPK == OPK_ARG) && !defined(IDENTITY)
#error "OPK_SCALAR and OPK_ARG need IDENTITY (the value every element beats)"
#endif
#if OPK == OPK_SCALAR && !defined(OP_SUM) && !defined(OP_PROD) && !defined(OP_MAX) && !defined(OP_MIN) && !defined(OP_NANMAX) && !defined(OP_NANMIN)
#error "OPK_SCALAR needs one of OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_NANMAX, OP_NANMIN"
#endif
#if OPK == OPK_ARG && !defined(ARG_MAX) && !defined(ARG_MIN)
#error "OPK_ARG needs ARG_MAX or ARG_MIN"
#endif
#if (OPK == OPK_WELFORD || OPK == OPK_LSE) && !ACC_IS_FLOAT
#error "var/std/logsumexp accumulate in a floating type"
#endif
#if ENTRY == ENTRY_ROWS
#if !defined(LANES) || !defined(SG_MODE) || !defined(SG_SIZE) || !defined(REQD_SG)
#error "reduce_rows_state needs LANES, SG_MODE, SG_SIZE and REQD_SG"
#endif
#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if SG_MODE != SG_LOCAL && SG_MODE != SG_SHUFFLE_KHR && SG_MODE != SG_SHUFFLE_QCOM
#error "reduce_rows_state merges states with shuffles or local memory (SG_MODE 0, 2 or 3)"
#endif
#if SG_MODE == SG_SHUFFLE_QCOM
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no CUDA meaning: use 2"
#endif
#if SG_MODE != SG_LOCAL && SG_SIZE != 32
#error "CUDA sub-groups are warps: SG_SIZE must be 32"
#endif
#if REQD_SG != 0
#error "REQD_SG must be 0 on CUDA (the warp width is fixed)"
#endif
#endif
#if IN_STATES && VEC != 1
#error "a pass over partial states reads one state at a time (VEC 1)"
#endif
#if WG_SIZE > 1024 || (WG_SIZE % 32) != 0
#error "WG_SIZE must be a multiple of 32 and at most 1024 on CUDA"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 1, 2, 4, 8 or 16"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

/* Constants the planner's IDENTITY values name (OpenCL C built-ins, absent from NVRTC). */
#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
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
#undef LONG_MAX
#undef LONG_MIN
#undef ULONG_MAX
#define LONG_MAX 9223372036854775807LL
#define LONG_MIN (-LONG_MAX - 1LL)
#define ULONG_MAX 18446744073709551615ULL

namespace clreduce_cuda {

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;
typedef unsigned short half; /* storage only; IN_HALF / OUT_HALF convert */

template <class T> struct cl_type { typedef T type; };
template <> struct cl_type<char> { typedef signed char type; };
template <> struct cl_type<long> { typedef long long type; };

typedef cl_type<IN_T>::type in_t;
typedef cl_type<ACC_T>::type acc_t;
typedef cl_type<OUT_T>::type out_t;

static_assert(sizeof(acc_t) == ACC_BYTES, "ACC_BYTES does not match ACC_T");

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

template <class T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }
template <class T> __device__ __forceinline__ T abs_of(T x) { return x > (T)0 ? x : (T)((T)0 - x); }
template <> __device__ __forceinline__ float abs_of<float>(float x) {
    return __int_as_float(__float_as_int(x) & 0x7fffffff);
}
template <> __device__ __forceinline__ double abs_of<double>(double x) {
    return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffLL);
}

/* ---- loads: element -> mapped -> ACC_T ------------------------------------------------- */
#if IN_HALF
typedef float raw_t;
#else
typedef in_t raw_t;
#endif

__device__ __forceinline__ acc_t map_to_acc(raw_t x) {
#if OPK != OPK_SCALAR || MAP == MAP_NONE
    return (acc_t)x;
#elif MAP == MAP_ABS
    constexpr bool RAW_IS_FLOAT = (raw_t)0.5 != (raw_t)0;
    return RAW_IS_FLOAT ? (acc_t)abs_of(x) : abs_of((acc_t)x);
#elif MAP == MAP_SQUARE
    constexpr bool RAW_IS_FLOAT = (raw_t)0.5 != (raw_t)0;
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

__device__ __forceinline__ acc_t load1(const in_t *p) { return to_acc(__ldg(p)); }

#if VEC > 1 && !IN_STATES
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
#endif

/* ---- states ---------------------------------------------------------------------------- */
#if OPK == OPK_SCALAR
struct state_t { acc_t a; };
__device__ __forceinline__ acc_t combine(acc_t a, acc_t b) {
#if defined(OP_SUM)
    return a + b;
#elif defined(OP_PROD)
    return a * b;
#elif ACC_IS_FLOAT && defined(OP_NANMAX)
    return (b != b || a > b) ? a : b;
#elif ACC_IS_FLOAT && defined(OP_NANMIN)
    return (b != b || a < b) ? a : b;
#elif defined(OP_NANMAX) || defined(OP_MAX)
#if ACC_IS_FLOAT
    return (a != a || a > b) ? a : b;
#else
    return a > b ? a : b;
#endif
#else
#if ACC_IS_FLOAT
    return (a != a || a < b) ? a : b;
#else
    return a < b ? a : b;
#endif
#endif
}
__device__ __forceinline__ state_t st_identity() { state_t s; s.a = IDENTITY; return s; }
__device__ __forceinline__ state_t st_push(state_t s, acc_t v, ulong) { s.a = combine(s.a, v); return s; }
__device__ __forceinline__ state_t st_merge(state_t x, state_t y) { x.a = combine(x.a, y.a); return x; }

#elif OPK == OPK_WELFORD
/* Running mean and sum of squared deviations; Chan et al.'s pairwise merge. */
struct state_t { acc_t mean; acc_t m2; ulong n; };
__device__ __forceinline__ state_t st_identity() { state_t s; s.mean = 0; s.m2 = 0; s.n = 0; return s; }
__device__ __forceinline__ state_t st_push(state_t s, acc_t v, ulong) {
    s.n += 1;
    const acc_t d = v - s.mean;
    s.mean += d / (acc_t)s.n;
    s.m2 += d * (v - s.mean);
    return s;
}
__device__ __forceinline__ state_t st_merge(state_t x, state_t y) {
    if (y.n == 0) return x;
    if (x.n == 0) return y;
    const ulong n = x.n + y.n;
    const acc_t d = y.mean - x.mean;
    const acc_t wy = (acc_t)y.n / (acc_t)n;
    x.mean = x.mean + d * wy;
    x.m2 = x.m2 + y.m2 + d * d * (acc_t)x.n * wy;
    x.n = n;
    return x;
}

#elif OPK == OPK_ARG
/* First occurrence wins ties, and a NaN beats every number (numpy's argmax/argmin). */
struct state_t { acc_t v; ulong i; };
__device__ __forceinline__ bool beats(acc_t a, acc_t b) {
#if defined(ARG_MAX)
    return a > b;
#else
    return a < b;
#endif
}
__device__ __forceinline__ state_t st_identity() { state_t s; s.v = IDENTITY; s.i = ULONG_MAX; return s; }
__device__ __forceinline__ state_t st_merge(state_t x, state_t y) {
#if ACC_IS_FLOAT
    const bool xn = is_nan(x.v), yn = is_nan(y.v);
    if (xn || yn) {
        if (xn && yn) return x.i < y.i ? x : y;
        return xn ? x : y;
    }
#endif
    if (beats(x.v, y.v)) return x;
    if (beats(y.v, x.v)) return y;
    return x.i < y.i ? x : y;
}
__device__ __forceinline__ state_t st_push(state_t s, acc_t v, ulong k) {
    state_t t; t.v = v; t.i = k;
    return st_merge(s, t);
}

#elif OPK == OPK_LSE
/* Online log-sum-exp: (running max m, sum of exp(x - m)). Equal maxima add counts directly
 * so two +inf never meet in inf - inf. */
struct state_t { acc_t m; acc_t s; };
__device__ __forceinline__ state_t st_identity() { state_t s; s.m = -INFINITY; s.s = 0; return s; }
__device__ __forceinline__ state_t st_merge(state_t x, state_t y) {
    if (is_nan(x.m) || is_nan(y.m) || is_nan(x.s) || is_nan(y.s)) { x.m = NAN; x.s = NAN; return x; }
    if (y.s == 0) return x;
    if (x.s == 0) return y;
    if (x.m == y.m) { x.s += y.s; return x; }
    if (x.m > y.m) { x.s += y.s * exp(y.m - x.m); return x; }
    y.s += x.s * exp(x.m - y.m);
    return y;
}
__device__ __forceinline__ state_t st_push(state_t s, acc_t v, ulong) {
    if (v == -INFINITY) return s;
    state_t t; t.m = v; t.s = 1;
    return st_merge(s, t);
}
#endif

/* ---- finalize (passes that write results, not partial states) --------------------------- */
#if !OUT_STATES
__device__ __forceinline__ void st_write(out_t *out, ulong idx, state_t s, ulong count, acc_t param) {
#if FINALIZE == FIN_INDEX
    out[idx] = (out_t)s.i;
#else
    acc_t r;
#if FINALIZE == FIN_NONE
    r = s.a;
#elif FINALIZE == FIN_MEAN
    r = s.a / (acc_t)count;
#elif FINALIZE == FIN_SQRT
    r = (acc_t)sqrt((double)s.a);
#elif FINALIZE == FIN_VAR || FINALIZE == FIN_STD
    /* numpy divides by max(n - ddof, 0): 0/0 -> nan, x/0 -> inf */
    acc_t dof = (acc_t)s.n - param;
    dof = dof > (acc_t)0 ? dof : (acc_t)0;
    r = s.m2 / dof;
#if FINALIZE == FIN_STD
    r = sqrt(r);
#endif
#elif FINALIZE == FIN_LSE
    r = (s.s == 0) ? (acc_t)(-INFINITY) : s.m + log(s.s);
#endif
#if OUT_HALF
    out[idx] = float_to_half((float)r);
#else
    out[idx] = (out_t)r;
#endif
#endif
}
#endif /* !OUT_STATES */

#if IN_STATES
typedef state_t in_elem_t;
#else
typedef in_t in_elem_t;
#endif
#if OUT_STATES
typedef state_t out_elem_t;
#else
typedef out_t out_elem_t;
#endif

/* ---- rows ------------------------------------------------------------------------------ */
#if ENTRY == ENTRY_ROWS

#define FULL_MASK 0xffffffffu

template <class T> __device__ __forceinline__ T shfl(T v, int m) { return __shfl_xor_sync(FULL_MASK, v, m); }

__device__ __forceinline__ state_t st_shuffle_xor(state_t s, int m) {
#if OPK == OPK_SCALAR
    s.a = shfl(s.a, m);
#elif OPK == OPK_WELFORD
    s.mean = shfl(s.mean, m); s.m2 = shfl(s.m2, m); s.n = shfl(s.n, m);
#elif OPK == OPK_ARG
    s.v = shfl(s.v, m); s.i = shfl(s.i, m);
#else
    s.m = shfl(s.m, m); s.s = shfl(s.s, m);
#endif
    return s;
}

template <int WIDTH>
__device__ __forceinline__ state_t st_butterfly(state_t s) {
#pragma unroll
    for (int m = WIDTH >> 1; m > 0; m >>= 1) {
        s = st_merge(s, st_shuffle_xor(s, m));
    }
    return s;
}

#define TEAMS (WG_SIZE / LANES)

/* One team's share of one row chunk (elements [start, start + len) of the row at p). */
__device__ __forceinline__ state_t team_chunk(const in_elem_t *__restrict__ p, ulong start, ulong len, uint lane) {
    state_t st = st_identity();
#if IN_STATES
#pragma unroll 1
    for (ulong i = lane; i < len; i += LANES) {
        st = st_merge(st, p[i]);
    }
#elif VEC > 1
    /* scalar head up to the first WORD-aligned element, VEC-element vectors, scalar tail */
    const uint mis = (uint)((reinterpret_cast<unsigned long long>(p) % WORD) / sizeof(in_t));
    ulong head = mis ? (ulong)(ELEMS_PER_WORD - mis) : 0;
    head = head < len ? head : len;
#pragma unroll 1
    for (ulong i = lane; i < head; i += LANES) {
        st = st_push(st, load1(p + i), start + i);
    }
    const in_t *q = p + head;
    const ulong rest = len - head;
    const ulong full = rest - rest % VEC;
#pragma unroll 1
    for (ulong i = (ulong)lane * VEC; i < full; i += (ulong)LANES * VEC) {
        acc_t v[VEC];
        load_vec(q + i, v);
#if OPK == OPK_WELFORD
        /* a whole vector enters as one (mean, m2, VEC) state: one divide per VEC */
        acc_t sum = 0;
#pragma unroll
        for (int j = 0; j < VEC; ++j) sum += v[j];
        state_t c; c.mean = sum / (acc_t)VEC; c.m2 = 0; c.n = VEC;
#pragma unroll
        for (int j = 0; j < VEC; ++j) { const acc_t d = v[j] - c.mean; c.m2 += d * d; }
        st = st_merge(st, c);
#else
#pragma unroll
        for (int j = 0; j < VEC; ++j) st = st_push(st, v[j], start + head + i + j);
#endif
    }
#pragma unroll 1
    for (ulong i = full + lane; i < rest; i += LANES) {
        st = st_push(st, load1(q + i), start + head + i);
    }
#else
#pragma unroll 1
    for (ulong i = lane; i < len; i += LANES) {
        st = st_push(st, load1(p + i), start + i);
    }
#endif
    return st;
}

extern "C" __global__ void __launch_bounds__(WG_SIZE, MIN_BLOCKS)
reduce_rows_state(const in_elem_t *__restrict__ in, const ulong in_offset,
                  out_elem_t *__restrict__ out, const ulong out_offset,
                  const ulong n_rows, const ulong row_len, const ulong row_stride,
                  const ulong chunk_len, const ulong count, const acc_t param)
{
#if LANES > 1 && (SG_MODE == SG_LOCAL || LANES > 32)
#if SG_MODE == SG_LOCAL
    __shared__ state_t scratch[WG_SIZE];
#else
    __shared__ state_t scratch[WG_SIZE / 32];
#endif
#endif
    const uint lid = threadIdx.x;
    const uint lane = lid % LANES;
    const uint team = lid / LANES;
    const ulong n_tasks = n_rows * SPLIT;
    const ulong task_stride = (ulong)gridDim.x * TEAMS;

    for (ulong base = (ulong)blockIdx.x * TEAMS; base < n_tasks; base += task_stride) {
        const ulong task = base + team;
        state_t st = st_identity();
        if (task < n_tasks) {
            const ulong row = task / SPLIT;
            const ulong start = (task % SPLIT) * chunk_len;
            const ulong stop = start + chunk_len < row_len ? start + chunk_len : row_len;
            const ulong len = stop > start ? stop - start : 0;
            st = team_chunk(in + in_offset + row * row_stride + start, start, len, lane);
        }

#if LANES > 1
#if SG_MODE == SG_LOCAL
        scratch[lid] = st;
        __syncthreads();
        for (uint s = LANES >> 1; s > 0; s >>= 1) {
            if (lane < s) scratch[lid] = st_merge(scratch[lid], scratch[lid + s]);
            __syncthreads();
        }
        st = scratch[lid];
#elif LANES <= 32
        st = st_butterfly<LANES>(st);
#else
        st = st_butterfly<32>(st);
        if ((lid & 31u) == 0) scratch[lid >> 5] = st;
        __syncthreads();
        if (lane < 32) { /* exactly the team's first warp */
            state_t part = st_identity();
            for (uint j = lane; j < LANES / 32; j += 32) {
                part = st_merge(part, scratch[team * (LANES / 32) + j]);
            }
            st = st_butterfly<32>(part);
        }
        __syncthreads();
#endif
#endif
        if (lane == 0 && task < n_tasks) {
#if OUT_STATES
            out[out_offset + task] = st;
#else
            st_write(out, out_offset + task, st, count, param);
#endif
        }
    }
}
#endif /* ENTRY_ROWS */

/* ---- columns --------------------------------------------------------------------------- */
#if ENTRY == ENTRY_COLS
/* Thread -> (outer index, K chunk, block of VEC columns); columns vary fastest so a warp
 * reads one contiguous span of the inner axis at each k. */
extern "C" __global__ void __launch_bounds__(WG_SIZE, MIN_BLOCKS)
reduce_cols(const in_elem_t *__restrict__ in, const ulong in_offset,
            out_elem_t *__restrict__ out, const ulong out_offset,
            const ulong outer, const ulong k_len, const ulong inner,
            const ulong outer_stride, const ulong k_stride,
            const ulong chunk_len, const ulong count, const acc_t param)
{
    const ulong blocks = (inner + VEC - 1) / VEC;
    const ulong n_items = outer * SPLIT * blocks;
    const ulong stride = (ulong)gridDim.x * blockDim.x;
    for (ulong item = (ulong)blockIdx.x * blockDim.x + threadIdx.x; item < n_items; item += stride) {
        const ulong block = item % blocks;
        const ulong task = item / blocks; /* outer * SPLIT + chunk */
        const ulong o = task / SPLIT;
        const ulong k0 = (task % SPLIT) * chunk_len;
        const ulong k1 = k0 + chunk_len < k_len ? k0 + chunk_len : k_len;
        const ulong col = block * VEC;
        const uint ncols = (uint)(inner - col < (ulong)VEC ? inner - col : (ulong)VEC);
        const in_elem_t *p = in + in_offset + o * outer_stride + col;
        state_t st[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) st[j] = st_identity();
#if VEC > 1 && !IN_STATES
        const bool vector = ncols == VEC && reinterpret_cast<unsigned long long>(p) % WORD == 0 &&
                            (k_stride * sizeof(in_t)) % WORD == 0;
#else
        const bool vector = false;
#endif
#pragma unroll 1
        for (ulong k = k0; k < k1; ++k) {
            const in_elem_t *q = p + k * k_stride;
#if IN_STATES
            for (uint j = 0; j < ncols; ++j) st[j] = st_merge(st[j], q[j]);
#else
#if VEC > 1
            if (vector) {
                acc_t v[VEC];
                load_vec(q, v);
#pragma unroll
                for (int j = 0; j < VEC; ++j) st[j] = st_push(st[j], v[j], k);
                continue;
            }
#endif
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                if ((uint)j < ncols) st[j] = st_push(st[j], load1(q + j), k);
            }
#endif
        }
        /* partial states and results are laid out (outer, SPLIT or 1, inner) */
        const ulong dst = task * inner + col;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            if ((uint)j < ncols) {
#if OUT_STATES
                out[out_offset + dst + j] = st[j];
#else
                st_write(out, out_offset + dst + j, st[j], count, param);
#endif
            }
        }
    }
}
#endif /* ENTRY_COLS */

} /* namespace clreduce_cuda */
