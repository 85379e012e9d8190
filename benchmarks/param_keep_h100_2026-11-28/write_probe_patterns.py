"""Write-launch probes: access patterns and weight cache policy, f16 and f32, cupy kernels."""
import cupy as cp, numpy as np, sys
from probe_common import SCALE_SRC, report, timeit
src = r'''
#include <cuda_fp16.h>
// SCALE
__device__ __forceinline__ uint4 ld_def(const uint4* p) { return *p; }
__device__ __forceinline__ uint4 ld_l1last(const uint4* p) { uint4 v;
  asm("ld.global.L1::evict_last.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ld_l2last(const uint4* p) { uint4 v;
  asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], pol;\n}" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ld_first(const uint4* p) { uint4 v;
  asm("ld.global.L1::evict_first.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
template <int WM> __device__ __forceinline__ uint4 ldw(const uint4* p) {
  return WM == 0 ? ld_def(p) : WM == 1 ? ld_l1last(p) : WM == 2 ? ld_l2last(p) : __ldg(p); }
// flat: PER runs a thread, thread t of block b takes runs b*T*PER + t + k*T (Triton's layout)
template <bool HALF, int WM, int PER> __device__ void flat_(const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv,
    uint4* __restrict__ y, unsigned long long runs_per_row, unsigned long long n) {
  unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * PER + threadIdx.x;
  uint4 v[PER]; uint4 ww[PER]; float s[PER];
  #pragma unroll
  for (int k = 0; k < PER; ++k) { unsigned long long i = base + (unsigned long long)k * blockDim.x;
    if (i < n) { unsigned long long row = i / runs_per_row, col = i - row * runs_per_row; v[k] = x[i]; ww[k] = ldw<WM>(w + col); s[k] = inv[row]; } }
  #pragma unroll
  for (int k = 0; k < PER; ++k) { unsigned long long i = base + (unsigned long long)k * blockDim.x; if (i < n) y[i] = scale<HALF>(v[k], ww[k], s[k]); }
}
// walk: G groups per row; chunked (group g walks its contiguous chunk) or interleaved (stride G*T)
template <bool HALF, int WM, bool INTER> __device__ void walk_(const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv,
    uint4* __restrict__ y, unsigned long long runs_per_row, unsigned long long G) {
  unsigned long long row = blockIdx.x / G, g = blockIdx.x - row * G;
  const float s = inv[row];
  const uint4* xr = x + row * runs_per_row; uint4* yr = y + row * runs_per_row;
  if (INTER) {
    for (unsigned long long c = g * blockDim.x + threadIdx.x; c < runs_per_row; c += G * blockDim.x) yr[c] = scale<HALF>(xr[c], ldw<WM>(w + c), s);
  } else {
    unsigned long long chunk = (runs_per_row + G - 1) / G, b = g * chunk, e = min(b + chunk, runs_per_row);
    for (unsigned long long c = b + threadIdx.x; c < e; c += blockDim.x) yr[c] = scale<HALF>(xr[c], ldw<WM>(w + c), s);
  }
}
#define ARGS const uint4* __restrict__ x, const uint4* __restrict__ w, const float* __restrict__ inv, uint4* __restrict__ y, unsigned long long a, unsigned long long b
#define F(H, WM, PER) extern "C" __global__ void flat_##H##_##WM##_##PER(ARGS) { flat_<H, WM, PER>(x, w, inv, y, a, b); }
#define W(H, WM, I) extern "C" __global__ void __launch_bounds__(256, 4) walk_##H##_##WM##_##I(ARGS) { walk_<H, WM, I>(x, w, inv, y, a, b); }
F(1,0,1) F(1,1,1) F(1,2,1) F(1,3,1) F(1,0,2) F(1,1,2) F(1,2,2) F(1,0,4) F(1,2,4)
F(0,0,1) F(0,2,1) F(0,0,2) F(0,2,2) F(0,0,4) F(0,2,4)
W(1,0,0) W(1,2,0) W(1,0,1) W(1,2,1) W(0,0,0) W(0,2,0) W(0,0,1) W(0,2,1)
'''
m = cp.RawModule(code=src.replace("// SCALE", SCALE_SRC), options=("-std=c++17",))
SM = cp.cuda.Device().attributes["MultiProcessorCount"]
cases = [("float16", 64, 4194304), ("float16", 1, 1 << 28), ("float32", 1, 1 << 28), ("float16", 65536, 4096)]
for dt, rows, K in cases:
    half = dt == "float16"; H = int(half)
    x = cp.random.standard_normal((rows, K), dtype=cp.float32).astype(dt); y = cp.empty_like(x)
    w = cp.full(K, 1.5, dt); inv = cp.full(rows, 0.5, cp.float32)
    want = (x.astype(cp.float32) * 0.75).astype(dt)
    runs = K * x.itemsize // 16; n = rows * runs
    res = []
    for WM in (0, 1, 2, 3):
        for PER in (1, 2, 4):
            for T in (128, 256, 512):
                name = f"flat_{H}_{WM}_{PER}"
                try: k = m.get_function(name)
                except Exception: continue
                blocks = (n + T * PER - 1) // (T * PER)
                y.fill(0); t = timeit(k, (blocks,), (T,), (x, w, inv, y, np.uint64(runs), np.uint64(n)), reps=10)
                ok = bool((y == want).all()); res.append((t, f"{name} T{T}", ok))
    for WM in (0, 2):
        for I in (0, 1):
            for gpr in sorted({max(1, 4 * SM // rows), max(1, 8 * SM // rows), max(1, 16 * SM // rows)}):
                if rows * gpr > 2**31 - 1: continue
                name = f"walk_{H}_{WM}_{I}"; k = m.get_function(name)
                y.fill(0); t = timeit(k, (rows * gpr,), (256,), (x, w, inv, y, np.uint64(runs), np.uint64(gpr)), reps=10)
                ok = bool((y == want).all()); res.append((t, f"{name} G{gpr}", ok))
    report(dt, rows, K, x, res)
    del x, y, w, want
    cp.get_default_memory_pool().free_all_blocks()
