"""Feasibility: float16 softmax rows cached in registers as packed halves (exp computed twice)
against clreduce's plan and torch, on rows of 16384-65536."""
import sys
import numpy as np
import cupy as cp
import torch

SRC = r'''
#include <cuda_fp16.h>
#ifndef ACCEXP
#define ACCEXP 0
#endif
#ifndef KEEP
#define KEEP 0
#endif
#ifndef NANMAX
#define NANMAX 0
#endif
#if ACCEXP
#define EXPF(x) expf(x)
#else
#define EXPF(x) __expf(x)
#endif
#if NANMAX
#define MAXF(a, b) ((isnan(a) || (a) > (b)) ? (a) : (b))
#else
#define MAXF(a, b) fmaxf(a, b)
#endif
__device__ __forceinline__ float block_red(float v, float *sh, int is_max) {
    for (int o = 16; o; o >>= 1) { float w = __shfl_xor_sync(0xffffffff, v, o); v = is_max ? MAXF(v, w) : v + w; }
    const int wi = threadIdx.x >> 5, l = threadIdx.x & 31;
    if (l == 0) sh[wi] = v;
    __syncthreads();
    float r = sh[0];
    for (int i = 1; i < NT / 32; ++i) r = is_max ? MAXF(r, sh[i]) : r + sh[i];
    __syncthreads();
    return r;
}
extern "C" __global__ void __launch_bounds__(NT, MINB) softmax_h(const __half *x, __half *y, long R, long K) {
    __shared__ float sh[NT / 32];
    for (long row = blockIdx.x; row < R; row += gridDim.x) {
        const uint4 *src = (const uint4 *)(x + row * K);
        uint4 v[RUNS];
#pragma unroll
        for (int r = 0; r < RUNS; ++r) v[r] = src[r * NT + threadIdx.x];
        float m = __int_as_float(0xff800000);
#if KEEP
        float e[RUNS * 8];
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            const __half2 *h = (const __half2 *)&v[r];
#pragma unroll
            for (int k = 0; k < 4; ++k) { float2 f = __half22float2(h[k]); e[r * 8 + 2 * k] = f.x; e[r * 8 + 2 * k + 1] = f.y; }
        }
#pragma unroll
        for (int i = 0; i < RUNS * 8; ++i) m = MAXF(m, e[i]);
        m = block_red(m, sh, 1);
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            float rs = 0.f;
#pragma unroll
            for (int k = 0; k < 8; ++k) { e[r * 8 + k] = EXPF(e[r * 8 + k] - m); rs += e[r * 8 + k]; }
            s += rs;
        }
        s = block_red(s, sh, 0);
        const float inv = 1.f / s;
        uint4 *dst = (uint4 *)(y + row * K);
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            uint4 o;
            __half2 *ho = (__half2 *)&o;
#pragma unroll
            for (int k = 0; k < 4; ++k) ho[k] = __floats2half2_rn(e[r * 8 + 2 * k] * inv, e[r * 8 + 2 * k + 1] * inv);
            dst[r * NT + threadIdx.x] = o;
        }
#else
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            const __half2 *h = (const __half2 *)&v[r];
#pragma unroll
            for (int k = 0; k < 4; ++k) { float2 f = __half22float2(h[k]); m = MAXF(m, MAXF(f.x, f.y)); }
        }
        m = block_red(m, sh, 1);
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            const __half2 *h = (const __half2 *)&v[r];
#pragma unroll
            for (int k = 0; k < 4; ++k) { float2 f = __half22float2(h[k]); s += EXPF(f.x - m) + EXPF(f.y - m); }
        }
        s = block_red(s, sh, 0);
        const float inv = 1.f / s;
        uint4 *dst = (uint4 *)(y + row * K);
#pragma unroll
        for (int r = 0; r < RUNS; ++r) {
            uint4 o;
            const __half2 *h = (const __half2 *)&v[r];
            __half2 *ho = (__half2 *)&o;
#pragma unroll
            for (int k = 0; k < 4; ++k) { float2 f = __half22float2(h[k]); ho[k] = __floats2half2_rn(EXPF(f.x - m) * inv, EXPF(f.y - m) * inv); }
            dst[r * NT + threadIdx.x] = o;
        }
#endif
    }
}
'''
sys.path.insert(0, ".")
import clreduce  # noqa: E402

sms = cp.cuda.Device().attributes["MultiProcessorCount"]


def timeit(fn, xs, reps=20):
    for x in xs[:2]:
        fn(x)
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(5):
        s.record()
        for i in range(reps):
            fn(xs[i % len(xs)])
        e.record(); e.synchronize()
        out.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return sorted(out)[2]


for shp in sys.argv[1:]:
    R, K = map(int, shp.split("x"))
    xs = [(cp.random.standard_normal((R, K), dtype=cp.float32) * 3).astype(cp.float16) for _ in range(3)]
    nbytes = 2 * xs[0].nbytes
    ref = clreduce.softmax(xs[0])
    line = f"{shp}: clreduce={nbytes / timeit(clreduce.softmax, xs) / 1e6:.0f}"
    ts = [torch.as_tensor(x, device="cuda") for x in xs]
    line += f" torch={nbytes / timeit(lambda t: torch.softmax(t, -1), ts) / 1e6:.0f}"
    nt = 512
    runs = K // (nt * 8)
    for name, extra in (("plain", ()), ("accexp", ("-DACCEXP=1",)), ("keep", ("-DKEEP=1",)), ("nanmax", ("-DNANMAX=1",)),
                        ("all3", ("-DACCEXP=1", "-DKEEP=1", "-DNANMAX=1"))):
        for minb in (1, 2):
            mod = cp.RawModule(code=SRC, options=("--std=c++17", f"-DNT={nt}", f"-DRUNS={runs}", f"-DMINB={minb}") + extra)
            f = mod.get_function("softmax_h")
            y = cp.empty_like(xs[0])
            for grid in (R, sms * 64):
                run = lambda x, f=f, y=y, grid=grid: f((grid,), (nt,), (x, y, np.int64(R), np.int64(K)))
                run(xs[0])
                err = float(cp.abs(y.astype(cp.float32) - ref.astype(cp.float32)).max())
                line += f" {name}/b{minb}/g{'R' if grid == R else '64'}={nbytes / timeit(run, xs) / 1e6:.0f}(r{f.num_regs})"
    print(line, flush=True)
