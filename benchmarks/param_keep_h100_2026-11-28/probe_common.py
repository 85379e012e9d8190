"""What the write probes share: the scale of a 16-byte run (x * s * w, float16 or float32,
float math) as CUDA source, and the CUDA-event timing of one kernel (median of `reps` after 3
warm-up launches, microseconds)."""
import cupy as cp

SCALE_SRC = r'''
template <bool HALF> __device__ __forceinline__ uint4 scale(uint4 v, uint4 ww, float s) {
  if (HALF) { __half2* hv = (__half2*)&v; const __half2* hw = (const __half2*)&ww;
    #pragma unroll
    for (int e = 0; e < 4; ++e) { float2 a = __half22float2(hv[e]), b = __half22float2(hw[e]); hv[e] = __floats2half2_rn(a.x * s * b.x, a.y * s * b.y); }
  } else { float* f = (float*)&v; const float* g = (const float*)&ww;
    #pragma unroll
    for (int e = 0; e < 4; ++e) f[e] = f[e] * s * g[e]; }
  return v; }
'''

_ev0, _ev1 = None, None


def timeit(k, grid, block, args, reps=15):
    global _ev0, _ev1
    if _ev0 is None:
        _ev0, _ev1 = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        k(grid, block, args)
    ts = []
    for _ in range(reps):
        _ev0.record()
        k(grid, block, args)
        _ev1.record()
        _ev1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(_ev0, _ev1))
    return sorted(ts)[reps // 2] * 1e3


def report(dt, rows, k, x, res):
    """Print one shape's (time, name, bits ok) results fastest first, GB/s of x read and y
    written (one row: the weight read too)."""
    traffic = 3 * x.nbytes if rows == 1 else 2 * x.nbytes
    for t, name, ok in sorted(res):
        print(f"{dt} {rows}x{k} {name:22s} {t:8.1f} us {traffic/t/1e3:6.0f} GB/s {'ok' if ok else 'WRONG'}")
