"""x load path: ld.global.nc (what __restrict__ const / __ldg give) vs plain ld.global (Triton's)."""
import cupy as cp, numpy as np
from probe_common import SCALE_SRC, report, timeit
src = r'''
#include <cuda_fp16.h>
// SCALE
__device__ __forceinline__ uint4 ld_plain(const uint4* p) { uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ld_nc(const uint4* p) { uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ld_l2last(const uint4* p) { uint4 v;
  asm volatile("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], pol;\n}" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ld_ncl2last(const uint4* p) { uint4 v;
  asm volatile("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n ld.global.nc.L1::evict_last.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], pol;\n}" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p)); return v; }
template <int M> __device__ __forceinline__ uint4 ldx(const uint4* p) { return M == 0 ? ld_nc(p) : ld_plain(p); }
template <int M> __device__ __forceinline__ uint4 ldw(const uint4* p) { return M == 0 ? ld_nc(p) : M == 1 ? ld_plain(p) : M == 2 ? ld_l2last(p) : ld_ncl2last(p); }
template <bool HALF, int XM, int WM> __device__ void flat_(const uint4* x, const uint4* w, const float* inv, uint4* y, unsigned shift, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { unsigned row = i >> shift, col = i & ((1u << shift) - 1u); y[i] = scale<HALF>(ldx<XM>(x + i), ldw<WM>(w + col), inv[row]); }
}
template <bool HALF, int XM, int WM, bool INTER> __device__ void walk_(const uint4* x, const uint4* w, const float* inv, uint4* y, unsigned long long runs_per_row, unsigned long long G) {
  unsigned long long row = blockIdx.x / G, g = blockIdx.x - row * G; const float s = inv[row];
  const uint4* xr = x + row * runs_per_row; uint4* yr = y + row * runs_per_row;
  if (INTER) { for (unsigned long long c = g * blockDim.x + threadIdx.x; c < runs_per_row; c += G * blockDim.x) yr[c] = scale<HALF>(ldx<XM>(xr + c), ldw<WM>(w + c), s); }
  else { unsigned long long chunk = (runs_per_row + G - 1) / G, b = g * chunk, e = min(b + chunk, runs_per_row);
    for (unsigned long long c = b + threadIdx.x; c < e; c += blockDim.x) yr[c] = scale<HALF>(ldx<XM>(xr + c), ldw<WM>(w + c), s); }
}
extern "C" __global__ void copy_nc(const uint4* a, uint4* b, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = ld_nc(a + i); }
extern "C" __global__ void copy_plain(const uint4* a, uint4* b, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = ld_plain(a + i); }
#define FA const uint4* x, const uint4* w, const float* inv, uint4* y
#define F(H, XM, WM) extern "C" __global__ void flat_##H##_##XM##_##WM(FA, unsigned s, unsigned n) { flat_<H, XM, WM>(x, w, inv, y, s, n); }
#define W(H, XM, WM, I) extern "C" __global__ void __launch_bounds__(256, 4) walk_##H##_##XM##_##WM##_##I(FA, unsigned long long r, unsigned long long g) { walk_<H, XM, WM, I>(x, w, inv, y, r, g); }
F(1,0,0) F(1,0,2) F(1,1,1) F(1,1,2) F(1,0,3) F(0,0,0) F(0,0,2) F(0,1,1) F(0,1,2) F(0,0,3)
W(1,0,0,0) W(1,0,2,0) W(1,1,1,0) W(1,1,2,0) W(1,0,3,0) W(1,0,2,1) W(1,1,2,1)
W(0,0,0,0) W(0,0,2,0) W(0,1,1,0) W(0,1,2,0) W(0,0,3,0) W(0,0,2,1) W(0,1,2,1)
'''
m = cp.RawModule(code=src.replace("// SCALE", SCALE_SRC), options=("-std=c++17",))
SM = cp.cuda.Device().attributes["MultiProcessorCount"]
a = cp.zeros(1 << 27, cp.uint32); b = cp.empty_like(a); n = a.nbytes // 16
for rep in range(2):
    for name in ("copy_nc", "copy_plain"):
        for T in (128, 256):
            t = timeit(m.get_function(name), ((n + T - 1) // T,), (T,), (a, b, np.uint32(n)))
            print(f"512MB {name:12s} T{T}: {t:7.1f} us {2*a.nbytes/t/1e3:6.0f} GB/s")
del a, b
for dt, rows, K in [("float16", 64, 4194304), ("float16", 1, 1 << 28), ("float32", 1, 1 << 28), ("float32", 16, 1 << 24)]:
    H = int(dt == "float16")
    x = cp.random.standard_normal((rows, K), dtype=cp.float32).astype(dt); y = cp.empty_like(x)
    w = cp.full(K, 1.5, dt); inv = cp.full(rows, 0.5, cp.float32)
    want = (x.astype(cp.float32) * 0.75).astype(dt)
    runs = K * x.itemsize // 16; n = rows * runs; shift = runs.bit_length() - 1
    res = []
    for XM, WM in ((0, 0), (0, 2), (1, 1), (1, 2), (0, 3)):
        for T in (128, 256):
            y.fill(0); t = timeit(m.get_function(f"flat_{H}_{XM}_{WM}"), ((n + T - 1) // T,), (T,), (x, w, inv, y, np.uint32(shift), np.uint32(n)))
            res.append((t, f"flat x{XM} w{WM} T{T}", bool((y == want).all())))
    for XM, WM, I in ((0, 0, 0), (0, 2, 0), (1, 1, 0), (1, 2, 0), (0, 3, 0), (0, 2, 1), (1, 2, 1)):
        for gpr in sorted({max(1, 4 * SM // rows), max(1, 8 * SM // rows)}):
            y.fill(0); t = timeit(m.get_function(f"walk_{H}_{XM}_{WM}_{I}"), (rows * gpr,), (256,), (x, w, inv, y, np.uint64(runs), np.uint64(gpr)))
            res.append((t, f"walk{'I' if I else 'C'} x{XM} w{WM} G{gpr}", bool((y == want).all())))
    report(dt, rows, K, x, res)
    del x, y, w, want
    cp.get_default_memory_pool().free_all_blocks()
