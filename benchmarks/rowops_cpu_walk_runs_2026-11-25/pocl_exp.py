import numpy as np, pyopencl as cl, time
from clreduce.backends import opencl
dev = [d for d in opencl.all_devices() if "pthread" in d.name][0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
n = 1 << 24
x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
mf = cl.mem_flags
a = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x); b = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
src = """
__kernel void e1(__global const float *a, __global float *b) { size_t i = get_global_id(0); b[i] = exp(a[i]); }
__kernel void e16(__global const float *a, __global float *b) { size_t i = get_global_id(0); vstore16(exp(vload16(i, a)), i, b); }
__kernel void loop1(__global const float *a, __global float *b, uint per) { size_t g = get_global_id(0); float s = 0;
  for (uint k = 0; k < per; ++k) s += exp(a[g * per + k]); b[g] = s; }
__kernel void loopc(__global const float *a, __global float *b, uint per) { size_t g = get_global_id(0); size_t n = get_global_size(0); float s = 0;
  for (uint k = 0; k < per; ++k) s += exp(a[k * n + g]); b[g] = s; }
"""
p = cl.Program(ctx, src).build(options=["-w"])
def t(name, gs, *args, ls=None):
    k = getattr(p, name)
    k(q, (gs,), ls, a, b, *args); q.finish()
    ts = []
    for _ in range(5):
        s = time.perf_counter(); k(q, (gs,), ls, a, b, *args); q.finish(); ts.append(time.perf_counter() - s)
    print(name, gs, f"{n / np.median(ts) / 1e6:.0f} Melem/s")
t("e1", n); t("e16", n // 16); t("loop1", n // 4096, np.uint32(4096), ls=(256,)); t("loopc", n // 4096, np.uint32(4096), ls=(256,))
