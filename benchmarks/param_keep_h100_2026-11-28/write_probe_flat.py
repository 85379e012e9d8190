"""Flat apply variants: index width, runs per thread, row-stat policy; f16 and f32."""
import cupy as cp, numpy as np
from probe_common import SCALE_SRC, report, timeit
src = r'''
#include <cuda_fp16.h>
// SCALE
__device__ __forceinline__ uint4 ld_l2last(const uint4* p) { uint4 v;
  asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], pol;\n}" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint2 ld_l2last2(const uint2* p) { uint2 v;
  asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0,%1}, [%2], pol;\n}" : "=r"(v.x),"=r"(v.y) : "l"(p)); return v; }
__device__ __forceinline__ float ld_l2lastf(const float* p) { float v;
  asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.L1::evict_last.L2::cache_hint.f32 %0, [%1], pol;\n}" : "=f"(v) : "l"(p)); return v; }
// 32-bit index, runtime runs_per_row (power of two assumed: shift), SLP: row stat via hint
template <bool HALF, bool SLP> __device__ void flat32_(const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv,
    uint4* __restrict__ y, unsigned shift, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { unsigned row = i >> shift, col = i & ((1u << shift) - 1u);
    float s = SLP ? ld_l2lastf(inv + row) : inv[row];
    y[i] = scale<HALF>(x[i], ld_l2last(w + col), s); }
}
// 64-bit index, 2-D grid: blockIdx.y row, blockIdx.x tile; no division
template <bool HALF> __device__ void tile2d_(const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv,
    uint4* __restrict__ y, unsigned long long runs_per_row, unsigned per) {
  const unsigned long long row = blockIdx.y; const float s = inv[row];
  const uint4* xr = x + row * runs_per_row; uint4* yr = y + row * runs_per_row;
  unsigned long long c = (unsigned long long)blockIdx.x * blockDim.x * per + threadIdx.x;
  for (unsigned k = 0; k < per; ++k, c += blockDim.x) if (c < runs_per_row) yr[c] = scale<HALF>(xr[c], ld_l2last(w + c), s);
}
// half-width runs (8 bytes a thread) as Triton's float32 pick: uint2
__device__ void flat32_f32v2_(const uint2* __restrict__ x, const uint2* __restrict__ w, const float* __restrict__ inv,
    uint2* __restrict__ y, unsigned shift, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { unsigned row = i >> shift, col = i & ((1u << shift) - 1u);
    float s = inv[row]; uint2 v = x[i]; uint2 ww = ld_l2last2(w + col);
    float* f = (float*)&v; const float* g = (const float*)&ww; f[0] = f[0] * s * g[0]; f[1] = f[1] * s * g[1]; y[i] = v; }
}
#define A4 const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv, uint4* __restrict__ y
extern "C" __global__ void flat32_h(A4, unsigned s, unsigned n) { flat32_<true, false>(x, w, inv, y, s, n); }
extern "C" __global__ void flat32_h_slp(A4, unsigned s, unsigned n) { flat32_<true, true>(x, w, inv, y, s, n); }
extern "C" __global__ void flat32_f(A4, unsigned s, unsigned n) { flat32_<false, false>(x, w, inv, y, s, n); }
extern "C" __global__ void flat32_f_slp(A4, unsigned s, unsigned n) { flat32_<false, true>(x, w, inv, y, s, n); }
extern "C" __global__ void tile2d_h(A4, unsigned long long r, unsigned per) { tile2d_<true>(x, w, inv, y, r, per); }
extern "C" __global__ void tile2d_f(A4, unsigned long long r, unsigned per) { tile2d_<false>(x, w, inv, y, r, per); }
extern "C" __global__ void flat32_f_v2(const uint2* __restrict__ x, const uint2* __restrict__ w, const float* __restrict__ inv, uint2* __restrict__ y, unsigned s, unsigned n) { flat32_f32v2_(x, w, inv, y, s, n); }
'''
m = cp.RawModule(code=src.replace("// SCALE", SCALE_SRC), options=("-std=c++17",))
for dt, rows, K in [("float16", 64, 4194304), ("float16", 1, 1 << 28), ("float32", 1, 1 << 28), ("float32", 64, 4194304)]:
    H = dt == "float16"; tag = "h" if H else "f"
    x = cp.random.standard_normal((rows, K), dtype=cp.float32).astype(dt); y = cp.empty_like(x)
    w = cp.full(K, 1.5, dt); inv = cp.full(rows, 0.5, cp.float32)
    want = (x.astype(cp.float32) * 0.75).astype(dt)
    runs = K * x.itemsize // 16; n = rows * runs; shift = runs.bit_length() - 1
    res = []
    for name in (f"flat32_{tag}", f"flat32_{tag}_slp"):
        for T in (128, 256, 512, 1024):
            y.fill(0); t = timeit(m.get_function(name), ((n + T - 1) // T,), (T,), (x, w, inv, y, np.uint32(shift), np.uint32(n)))
            res.append((t, f"{name} T{T}", bool((y == want).all())))
    for T in (128, 256):
        for per in (1, 2, 4, 8):
            tiles = (runs + T * per - 1) // (T * per)
            y.fill(0); t = timeit(m.get_function(f"tile2d_{tag}"), (tiles, rows), (T,), (x, w, inv, y, np.uint64(runs), np.uint32(per)))
            res.append((t, f"tile2d_{tag} T{T} per{per}", bool((y == want).all())))
    if not H:
        for T in (128, 256, 512):
            n2 = 2 * n
            y.fill(0); t = timeit(m.get_function("flat32_f_v2"), ((n2 + T - 1) // T,), (T,), (x, w, inv, y, np.uint32(shift + 1), np.uint32(n2)))
            res.append((t, f"flat32_f_v2 T{T}", bool((y == want).all())))
    report(dt, rows, K, x, res)
    del x, y, w, want
    cp.get_default_memory_pool().free_all_blocks()
