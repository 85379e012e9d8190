"""Independent differential fuzzer: clreduce vs numpy (float64 references), adversarial data."""
import os, sys, time, traceback, itertools
import numpy as np
import warnings
warnings.simplefilter('ignore')
import clreduce
import cupy as cp
try:
    import torch
except ImportError:
    torch = None

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 300
devsel = sys.argv[3] if len(sys.argv) > 3 else ""
rng = np.random.default_rng(seed)
class Kind:
    def __init__(self, name):
        self.name = name
        self.extensions = "cl_khr_fp64"
    def put(self, x):
        if self.name == "cupy":
            return cp.asarray(x)
        if x.dtype == np.uint64 or x.dtype == np.uint32 or x.dtype == np.uint16:
            return None  # torch lacks these on CUDA in older versions
        return torch.from_numpy(np.ascontiguousarray(x)).cuda()
    def get(self, y):
        if isinstance(y, tuple):
            return tuple(self.get(v) for v in y)
        if isinstance(y, cp.ndarray):
            return cp.asnumpy(y)
        if torch is not None and isinstance(y, torch.Tensor):
            return y.cpu().numpy()
        return np.asarray(y)
devs = [Kind("cupy")] + ([Kind("torch")] if torch is not None else [])
print("kinds:", [d.name for d in devs], flush=True)

FLOATS = ["float32", "float16", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64", "uint64", "uint32"]


def shape_pick():
    nd = rng.integers(1, 4)
    dims = []
    for _ in range(nd):
        r = rng.random()
        dims.append(int(rng.choice([1, 2, 3, 5, 7, 16, 31, 33, 64, 127, 128, 129, 255, 1000, 4097]) if r < 0.8 else rng.integers(1, 70000)))
    while np.prod(dims) > 3_000_000:
        dims[int(np.argmax(dims))] //= 3
    return tuple(max(1, d) for d in dims)


def data(shape, dtype, kind):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        if kind == "noncanon":
            b = rng.integers(0, 256, n).astype(np.uint8)
            b[rng.random(n) < 0.5] = 0
            return b.view(np.bool_).reshape(shape)
        return (rng.random(n) < 0.5).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if kind == "extreme":
            v = rng.choice([info.min, info.max, info.min + 1, info.max - 1, 0], n)
            return np.asarray(v).astype(dt).reshape(shape)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, dtype=dt).reshape(shape)
    x = rng.standard_normal(n)
    if kind == "offset":
        x = x + (1e4 if dt == np.float16 else 1e6)
    elif kind == "alt":
        x = np.where(np.arange(n) % 2 == 0, 1e8, 1e8 + 8) if dt != np.float16 else np.where(np.arange(n) % 2 == 0, 2048, 2050)
    elif kind == "cancel":
        x = x * 1e7
        x[1::2] = -x[0::2][: len(x[1::2])]
    elif kind == "near_max" and dt == np.float16:
        x = rng.uniform(60000, 65504, n) * rng.choice([-1, 1], n)
    elif kind == "special":
        m = rng.random(n)
        x[m < 0.01] = np.nan
        x[(m > 0.01) & (m < 0.02)] = np.inf
        x[(m > 0.02) & (m < 0.03)] = -np.inf
    elif kind == "subnormal":
        x = x * (1e-40 if dt == np.float32 else 1e-6 if dt == np.float16 else 1e-310)
    elif kind == "big":
        x = x * (1e30 if dt == np.float32 else 100)
    return x.astype(dt).reshape(shape)


def layout(x):
    r = rng.random()
    if r < 0.25 and x.ndim >= 2:
        return x, (lambda a: a.swapaxes(0, -1) if hasattr(a, "swapaxes") else a.transpose(0, -1))
    if r < 0.35 and x.shape[-1] > 2:
        return x, (lambda a: a[..., ::2])
    return x, (lambda a: a)


def close(got, want, tol_abs, what):
    got = np.asarray(got, dtype=np.float64) if np.asarray(got).dtype.kind != "b" else np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"{what}: shape {got.shape} vs {want.shape}"
    if want.dtype.kind in "biu" and got.dtype.kind in "biu":
        if not np.array_equal(got, want):
            return f"{what}: int mismatch {np.argwhere(got != want)[:3].tolist()} got {got[got != want][:3]} want {want[got != want][:3]}"
        return None
    want = want.astype(np.float64)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    if not np.array_equal(nan_g, nan_w):
        idx = np.argwhere(nan_g != nan_w)[:3]
        return f"{what}: NaN mismatch at {idx.tolist()} got {got[nan_g != nan_w][:3]} want {want[nan_g != nan_w][:3]}"
    inf_w = np.isinf(want)
    if not np.array_equal(got[inf_w], want[inf_w]):
        return f"{what}: inf mismatch"
    ok = ~nan_w & ~inf_w
    err = np.abs(got[ok] - want[ok])
    tol = np.broadcast_to(tol_abs, want.shape)[ok]
    bad = err > tol
    if bad.any():
        i = np.argmax(err - tol)
        return f"{what}: err {err[i]:.3g} > tol {tol[i]:.3g} (got {got[ok][i]!r} want {want[ok][i]!r}), {bad.sum()} bad"
    return None


def reduction_case(dev):
    op = rng.choice(["sum", "mean", "var", "std", "max", "min", "argmax", "argmin", "nansum", "nanmean", "nanmax",
                     "nanmin", "prod", "any", "all", "count_nonzero", "logsumexp", "norm"])
    dtype = rng.choice(FLOATS + INTS + ["bool"], p=None)
    if op in ("logsumexp", "norm", "nansum", "nanmean", "nanmax", "nanmin") and dtype not in FLOATS:
        dtype = "float32"
    shape = shape_pick()
    kind = rng.choice(["normal", "offset", "alt", "cancel", "near_max", "special", "subnormal", "big", "extreme", "noncanon"])
    base, view = layout(data(shape, dtype, kind))
    xd = dev.put(base)
    if xd is None:
        return None
    x, xd = view(base), view(xd)
    nd = x.ndim
    axis = rng.choice([None, -1, 0, "tuple"]) if nd > 1 else rng.choice([None, 0, -1])
    if axis == "tuple":
        axis = tuple(sorted(rng.choice(nd, size=rng.integers(1, nd + 1), replace=False).tolist()))
    if op in ("argmax", "argmin") and isinstance(axis, tuple):
        axis = -1
    if op in ("logsumexp", "norm") and isinstance(axis, tuple) and len(axis) > 1 and op == "norm":
        axis = -1
    keep = bool(rng.random() < 0.3)
    kwargs = dict(axis=axis)
    if op not in ("argmax", "argmin", "count_nonzero") or True:
        kwargs["keepdims"] = keep
    if op in ("count_nonzero",):
        kwargs.pop("keepdims")
    fn = getattr(clreduce, op)
    want_np = None
    x64 = x.astype(np.float64) if x.dtype.kind == "f" else x
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            if op == "logsumexp":
                m = np.max(x64, axis=axis, keepdims=True)
                m = np.where(np.isfinite(m), m, 0)
                want = np.log(np.sum(np.exp(x64 - m), axis=axis, keepdims=True)) + m
                if not keep:
                    want = np.squeeze(want, axis=axis) if axis is not None else want.reshape(())
                ref_np = None
            elif op == "norm":
                want = np.linalg.norm(x64, axis=axis, keepdims=keep) if not isinstance(axis, tuple) or len(axis) <= 2 else None
                if want is None:
                    return None
                own = np.asarray(np.linalg.norm(x, axis=axis, keepdims=keep), np.float64)
                want = np.where(np.isfinite(own) & (own != 0), want, own)
            else:
                npfn = getattr(np, op)
                want = npfn(x, **kwargs)
                if x.dtype.kind == "f" and op in ("sum", "mean", "var", "std", "nansum", "nanmean", "prod"):
                    want_np = want
                    want = npfn(x64, **kwargs)
                else:
                    want_np = None
        except Exception as e:  # numpy raises: clreduce should raise too
            try:
                fn(xd, **kwargs)
            except Exception as e2:
                return None
            return f"{op} {dtype} {shape} {kind} axis={axis}: numpy raised {type(e).__name__}, clreduce did not"
        try:
            got = dev.get(fn(xd, **kwargs))
        except clreduce.UnsupportedOnDevice:
            return None
        except Exception as e:
            return f"{op} {dtype} {x.shape} {kind} axis={axis} keep={keep}: raised {type(e).__name__}: {e}"
    got = np.asarray(got)
    what = f"{op} {dtype} {x.shape} strides={x.strides} {kind} axis={axis} keep={keep}"
    if op not in ("logsumexp", "norm") and got.dtype != np.asarray(npfn(x, **kwargs) if True else want).dtype:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wd = np.asarray(npfn(x, **kwargs)).dtype
        if got.dtype != wd:
            return f"{what}: dtype {got.dtype} vs numpy {wd}"
    if op in ("max", "min", "nanmax", "nanmin", "argmax", "argmin", "any", "all", "count_nonzero"):
        return close(got, want, 0.0, what)
    if x.dtype.kind in "iub" and op in ("sum", "prod", "nansum"):
        return close(got, want, 0.0, what)
    # float-ish: bound by the magnitudes
    outdt = got.dtype
    eps = np.finfo(outdt).eps if outdt.kind == "f" else 2.0 ** -52
    with np.errstate(all="ignore"):
        ax = axis
        n = x.size if ax is None else int(np.prod([x.shape[a] for a in (ax if isinstance(ax, tuple) else (ax,))]))
        absx = np.abs(x.astype(np.float64))
        if op in ("sum", "nansum", "mean", "nanmean"):
            s = np.nansum(absx, axis=axis, keepdims=keep)
            if op in ("mean", "nanmean"):
                s = s / max(n, 1)
            tol = 8 * eps * s + 4 * eps * np.abs(want)
            if x.dtype.kind in "iu":
                tol = 2 * np.finfo(np.float64).eps * s + np.abs(want) * 2e-16
        elif op in ("var", "std"):
            if False:
                eps = 2.0 ** -23
            tol = 64 * eps * np.abs(want) + 8 * eps * np.var(x.astype(np.float64), axis=axis, keepdims=keep) ** (0.5 if op == "std" else 1) + (eps * np.nanmax(absx, axis=axis, keepdims=keep)) ** (1 if op == "std" else 2) * 64
            if want_np is not None:
                tol = np.maximum(tol, 2 * np.abs(np.asarray(want_np, np.float64) - want))
        elif op == "prod":
            tol = 8 * n * eps * np.abs(want) + 1e-300
        elif op == "logsumexp":
            tol = 16 * eps * (1 + np.abs(want)) + 1e-300
        elif op == "norm":
            tol = 16 * eps * np.abs(want) + 1e-300
        else:
            tol = 0
        if want_np is not None and op in ("sum", "mean", "nansum", "nanmean"):
            tol = np.maximum(tol, 1.01 * np.abs(np.asarray(want_np, np.float64) - want))
    return close(got, want, tol, what)


import sys as _s
_s.path.insert(0, "tests")
from rowops_refs import ref_softmax, ref_log_softmax, ref_rms_norm, ref_layer_norm


def row_case(dev):
    op = rng.choice(["softmax", "log_softmax", "rms_norm", "layer_norm", "moments", "absmax_scale", "quantize_int8",
                     "cumsum", "cumprod", "logcumsumexp"])
    dtype = rng.choice(["float32", "float16", "float64"] + (["int32", "int64", "uint8", "bool"] if op == "cumsum" else []))
    if dtype == "float64" and "fp64" not in dev.extensions:
        dtype = "float32"
    shape = shape_pick()
    if rng.random() < 0.2:
        shape = shape[:-1] + (int(rng.choice([1, 7, 4097, 10**6, 65536, 262145])),)
        while np.prod(shape) > 3_000_000 and len(shape) > 1:
            shape = shape[1:]
    kind = rng.choice(["normal", "offset", "cancel", "near_max", "special", "subnormal", "big", "extreme", "noncanon"])
    if op in ("cumprod",) and kind in ("normal", "offset", "big"):
        kind = "small"
    x = data(shape, dtype, kind)
    if kind == "small":
        x = np.exp(0.01 * rng.standard_normal(shape)).astype(dtype)
    base, view = layout(x)
    xd = dev.put(base)
    if xd is None:
        return None
    x, xd = view(base), view(xd)
    nd = x.ndim
    axis = -1 if op in ("rms_norm", "layer_norm") else int(rng.integers(-nd, nd))
    what = f"{op} {dtype} {x.shape} strides={x.strides} {kind} axis={axis}"
    k = x.shape[axis]
    kw = {}
    if op == "rms_norm" and rng.random() < 0.5:
        kw["weight"] = rng.standard_normal(k).astype(dtype)
    if op == "layer_norm" and rng.random() < 0.5:
        kw["weight"] = rng.standard_normal(k).astype(dtype)
        kw["bias"] = rng.standard_normal(k).astype(dtype)
    kwd = {name: dev.put(v) for name, v in kw.items()}
    fn = getattr(clreduce, op)
    try:
        if op in ("rms_norm", "layer_norm"):
            got = dev.get(fn(xd, **kwd))
        else:
            got = dev.get(fn(xd, axis=axis))
    except clreduce.UnsupportedOnDevice:
        return None
    except Exception as e:
        return f"{what}: raised {type(e).__name__}: {e}"
    x64 = x.astype(np.float64)
    eps = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}.get(dtype, 0)
    with np.errstate(all="ignore"):
        if op == "softmax":
            want = ref_softmax(x64, axis)
            return close(got, want.astype(dtype), 8 * eps * np.abs(want) + (1e-6 if dtype != "float16" else 1.2e-7) + 4 * eps * 1e-3, what)
        if op == "log_softmax":
            want = ref_log_softmax(x64, axis)
            spread = np.abs(x64 - np.nanmax(np.where(np.isfinite(x64), x64, np.nan), axis=axis, keepdims=True))
            return close(got, want.astype(dtype), 8 * eps * (np.abs(want) + 1) , what)
        if op == "rms_norm":
            want = ref_rms_norm(x64, kw.get("weight"))
            return close(got, want.astype(dtype), 16 * eps * (np.abs(want) + 1), what)
        if op == "layer_norm":
            want = ref_layer_norm(x64, kw.get("weight"), kw.get("bias"))
            mu = np.abs(x64.mean(-1, keepdims=True)); sd = x64.std(-1, keepdims=True)
            cond = 1 + mu / np.where(sd > 0, sd, 1)
            return close(got, want.astype(dtype), 16 * eps * (np.abs(want) + 1) * cond, what)
        if op == "moments":
            m, v = got
            wm, wv = x64.mean(axis), x64.var(axis)
            r = close(m, wm, 8 * eps * np.abs(x64).mean(axis) + 1e-300, what + " mean")
            return r or close(v, wv, 32 * eps * wv + 8 * eps * np.abs(x64).max(axis) ** 2 * eps, what + " var")
        if op == "absmax_scale":
            y, s = got
            ws = np.abs(x64).max(axis, keepdims=True)
            r = close(np.asarray(s).reshape(ws.shape), ws, 0, what + " scale")
            wy = x64 / np.where(ws == 0, 1, ws)
            wy = np.where(ws == 0, 0, wy)
            return r or close(y, wy.astype(dtype), 2 * eps * np.abs(wy) + 1e-7, what + " y")
        if op == "quantize_int8":
            q, s = got
            return None if np.asarray(q).dtype == np.int8 else what + " q dtype"
        if op == "cumsum":
            want = np.cumsum(x, axis)
            if x.dtype.kind in "biu":
                return close(got, want, 0, what)
            w64 = np.cumsum(x64, axis)
            s = np.cumsum(np.abs(x64), axis)
            n = np.arange(1, k + 1).reshape([-1 if i == (axis % nd) else 1 for i in range(nd)])
            return close(got, w64.astype(dtype) if dtype == "float16" else w64, 4 * eps * s * np.log2(n + 1) + 2 * eps * np.abs(w64), what)
        if op == "cumprod":
            w64 = np.cumprod(x64, axis)
            n = np.arange(1, k + 1).reshape([-1 if i == (axis % nd) else 1 for i in range(nd)])
            return close(got, w64.astype(dtype), 4 * eps * n * np.abs(w64) + 1e-300, what)
        if op == "logcumsumexp":
            w64 = np.logaddexp.accumulate(x64, axis)
            return close(got, w64.astype(dtype), 64 * eps * (np.abs(w64) + 1), what)
    return None


def main():
    t0 = time.time()
    counts = {}
    fails = 0
    i = 0
    while time.time() - t0 < budget:
        dev = devs[i % len(devs)]
        i += 1
        try:
            msg = reduction_case(dev) if rng.random() < 0.5 else row_case(dev)
        except Exception:
            msg = "FUZZER ERROR " + traceback.format_exc()
        name = dev.name
        counts[name] = counts.get(name, 0) + 1
        if msg:
            fails += 1
            print(f"[{name}] {msg}", flush=True)
    print("cases", counts, "fails", fails, flush=True)


main()
