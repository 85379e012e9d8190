"""The row ops' per-call fast path (clreduce/fastpath_rows.py): same answers and errors as
the full path.

No device needed: what tells calls apart (signatures) and what cannot be keyed.
Per OpenCL device: every row op, learned, answers bit for bit as the full path
(CLREDUCE_FAST_PATH=0) for numpy and pyopencl inputs, and really is served without it;
eps / weight dtype / out= learn separately; the bound; threads; errors stay errors; a bad
out= is never learned; whatever drops plans drops launchers; a launcher keeps no caller
array alive. On a CUDA GPU (skipped here): the same for cupy arrays and CUDA torch tensors,
torch's current stream, float16 weights converted per call, threads.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
from fast_helpers import fresh_fast_path, hammer  # noqa: F401 - fresh_fast_path: an autouse fixture
from fast_helpers import host as _host
from fast_helpers import same as _same

import clreduce
from clreduce import fastpath, fastpath_rows, rowops
from clreduce.plan_rowops import RowForce

try:
    import pyopencl as cl
    import pyopencl.array as cla
except ImportError:  # the GPU machine may have no pyopencl: the OpenCL tests have no devices
    cl = cla = None


def _key(x, op="rms_norm", axis=-1, weight=None, bias=None, eps=1e-6, out=None, backend=None, device=None,
         queue=None, force=None):
    return fastpath_rows.signature(op, x, axis, weight, bias, eps, out, backend, device, queue, force)


# ==== no device ================================================================================

def test_signature_tells_apart_what_changes_the_answer_or_the_error():
    x = np.zeros((4, 8), np.float32)
    w = np.ones(8, np.float32)
    base = _key(x, weight=w)
    assert base is not None and base == _key(np.ones((4, 8), np.float32), weight=np.zeros(8, np.float32))
    different = [
        _key(x),                                                   # no weight
        _key(x, weight=w.astype(np.float16)),                      # weight dtype
        _key(x, weight=np.ones(16, np.float32)[::2]),              # weight strides
        _key(x, weight=w, bias=w),                                 # a bias
        _key(x, weight=w, eps=1e-5), _key(x, weight=w, eps=1),     # eps, and its type
        _key(x, weight=w, out=np.empty((4, 8), np.float32)),       # out=
        _key(x, weight=w, out=np.empty((4, 8), np.float64)),       # out='s dtype
        _key(np.zeros((4, 9), np.float32), weight=w), _key(np.zeros((4, 8), np.float64), weight=w),
        _key(np.zeros((8, 4), np.float32).T, weight=w),            # strides
        _key(x, op="layer_norm", weight=w),                        # op
        _key(x, weight=w, backend="opencl"), _key(x, weight=w, device="pocl"),
        _key(x, weight=w, force=RowForce(lanes=4)), _key(x, weight=w, force=RowForce(vec=4)),
        _key(x, weight=w, axis=np.int64(-1)),                      # axis type
    ]
    assert all(k is not None for k in different)
    assert len({base, *different}) == len(different) + 1
    pair = (np.empty((4, 8), np.int8), None)
    assert _key(x, op="quantize_int8", eps=None, out=pair) != _key(x, op="quantize_int8", eps=None, out=pair[::-1])


def test_uncacheable_row_calls_have_no_signature(monkeypatch):
    x = np.zeros((4, 8), np.float32)
    assert _key(x, weight=[1.0] * 8) is None                       # not an array: converted per call
    assert _key(x, eps=np.float64(1e-6)) is None                   # a numpy scalar eps: slow path
    assert _key(x, force={"lanes": 4}) is None                     # a dict
    assert _key(x, axis=[1]) is None                               # unhashable axis
    assert _key(x.astype(">f4")) is None                           # byte-swapped
    assert _key([[1.0] * 8]) is None                               # not an array
    assert _key(x, op="moments", eps=None, out=[None, None]) is None  # out= of two results: a tuple
    assert _key(x, out=object()) is None
    monkeypatch.setenv("CLREDUCE_FAST_PATH", "0")
    assert _key(x) is None


def test_environment_is_part_of_the_signature(monkeypatch):
    x = np.zeros((4, 8), np.float32)
    before = _key(x)
    monkeypatch.setenv("CLREDUCE_ZERO_COPY", "0")
    assert _key(x) != before
    monkeypatch.delenv("CLREDUCE_ZERO_COPY")
    assert _key(x) == before


# ==== OpenCL devices ===========================================================================

def _data(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iub":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 2 + 0.25).astype(dtype)


W = _data(40, seed=11)
B = _data(40, seed=12)
# (op, input shape, dtype, keyword arguments, learned?)
ROW_CASES = [
    ("softmax", (6, 40), "float32", {}, True),
    ("log_softmax", (3, 2, 40), "float32", {}, True),
    ("rms_norm", (6, 40), "float32", {"weight": W}, True),
    ("rms_norm", (6, 40), "float32", {"eps": 0.5}, True),
    ("layer_norm", (6, 40), "float32", {"weight": W, "bias": B, "eps": 1e-3}, True),
    ("layer_norm", (6, 40), "float32", {"weight": W.astype(np.float16)}, True),  # converted per call
    ("moments", (6, 40), "float32", {}, True),
    ("moments", (40,), "float32", {}, True),                                     # 0-d mean and var
    ("absmax_scale", (6, 40), "float32", {}, True),
    ("quantize_int8", (6, 40), "float32", {}, True),
    ("cumsum", (6, 40), "int32", {"axis": -1}, True),
    ("cumsum", (6, 40), "float32", {}, True),                                    # axis=None: flattened
    ("cumprod", (6, 40), "float32", {"axis": 1}, True),
    ("logcumsumexp", (6, 40), "float32", {"axis": -1}, True),
    ("softmax", (6, 40), "float32", {"axis": 0}, False),                         # the axis is moved: a copy
    # statistics cast to float16 after the kernel: by the numpy launcher on the host; pyopencl
    # arrays keep the full path (it casts them through the host)
    ("absmax_scale", (6, 40), "float16", {}, "numpy"),
    ("moments", (6, 40), "float16", {}, "numpy"),
]


def _no_full_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the full path ran for a learned row-op call")

    for op in list(rowops._FULL):
        monkeypatch.setitem(rowops._FULL, op, refuse)


def _fp16_ok(cl_device) -> bool:
    return "cl_khr_fp16" in cl_device.extensions


def _as_kind(kind, host, queue):
    return host if kind == "numpy" else cla.to_device(queue, host)


@pytest.mark.parametrize("kind", ["numpy", "pyopencl"])
def test_learned_row_calls_answer_as_the_full_path(cl_device, cl_queue, kind, monkeypatch):
    learned = []
    for i, (op, shape, dtype, kwargs, expect_learned) in enumerate(ROW_CASES):
        if dtype == "float16" and not _fp16_ok(cl_device):
            continue
        x = _as_kind(kind, _data(shape, dtype, seed=i), cl_queue)
        kwargs = {name: (_as_kind(kind, v, cl_queue) if isinstance(v, np.ndarray) else v)
                  for name, v in kwargs.items()}
        where = {"device": cl_device} if kind == "numpy" else {}
        f = getattr(clreduce, op)
        before = fastpath.size()
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(x, **kwargs, **where)
            assert fastpath.size() == before  # CLREDUCE_FAST_PATH=0 learns nothing
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a launcher that disagrees warns
            first = f(x, **kwargs, **where)  # full path; learns
        second = f(x, **kwargs, **where)
        _same(first, slow)
        _same(second, slow)
        if not isinstance(expect_learned, bool):
            expect_learned = kind == expect_learned
        assert (fastpath.size() > before) == expect_learned, (op, shape, dtype, kwargs)
        if expect_learned:
            learned.append((f, x, kwargs, where, slow))
    assert len(learned) >= 10
    with monkeypatch.context() as m:
        _no_full_path(m)
        for f, x, kwargs, where, slow in learned:
            _same(f(x, **kwargs, **where), slow)


# Results of at least cl_host.ZERO_COPY_MIN_BYTES (16 KB): on devices that share host memory
# the learned numpy call has the kernels write them in place (cl_host.output_buffer)
BIG_ROW_CASES = [
    ("softmax", (64, 256), "float32", {}),                              # one result, 64 KB
    ("layer_norm", (64, 256), "float32", {"weight": _data(256, seed=3), "bias": _data(256, seed=4)}),
    ("quantize_int8", (64, 256), "float32", {}),                         # int8 values 16 KB + small scales
    ("moments", (2, 8192), "float32", {}),                               # statistics only (small)
    ("cumsum", (8, 4096), "int32", {"axis": -1}),                        # int64 result, 256 KB
]


def test_learned_numpy_calls_write_results_in_place(cl_device, monkeypatch):
    """The learned numpy call writes its large results straight into the numpy arrays it
    returns where the device shares host memory (every device this suite runs on: CPUs), and
    answers bit for bit as the full path; each call's arrays are its own."""
    from clreduce.backends import cl_host

    wrapped = []
    real = cl_host.output_buffer

    def counting(ctx, device, host):
        buf = real(ctx, device, host)
        wrapped.append(buf is not None)
        return buf

    monkeypatch.setattr(cl_host, "output_buffer", counting)
    shares = cl_host.shares_host_memory(cl_device)
    for i, (op, shape, dtype, kwargs) in enumerate(BIG_ROW_CASES):
        f = getattr(clreduce, op)
        x = _data(shape, dtype, seed=20 + i)
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(x, device=cl_device, **kwargs)
        f(x, device=cl_device, **kwargs)  # full path; learns
        del wrapped[:]
        second = f(x, device=cl_device, **kwargs)
        third = f(x + 1 if dtype != "float32" else x * 2, device=cl_device, **kwargs)
        _same(second, slow)  # not overwritten by the third call
        big = [r.nbytes >= cl_host.ZERO_COPY_MIN_BYTES for r in (second if isinstance(second, tuple) else (second,))]
        assert sum(wrapped) == (2 * sum(big) if shares else 0), (op, wrapped, big)
        for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (second, third))):
            assert not np.shares_memory(a, b)


def test_eps_weight_dtype_and_out_learn_separately(cl_device, cl_queue):
    x = _data((5, 40), seed=1)
    w32 = _data(40, seed=2)
    x64 = x.astype(np.float64)

    def ref(eps, w):
        return x64 / np.sqrt(np.mean(x64 ** 2, axis=-1, keepdims=True) + eps) * w.astype(np.float32)

    out = np.empty_like(x)
    for _ in range(3):  # the later rounds run learned
        for eps in (1e-6, 4.0):
            np.testing.assert_allclose(clreduce.rms_norm(x, w32, eps, device=cl_device), ref(eps, w32), rtol=2e-5)
            got = clreduce.rms_norm(x, w32, eps, out=out, device=cl_device)
            assert got is out
            np.testing.assert_allclose(out, ref(eps, w32), rtol=2e-5)
        w16 = w32.astype(np.float16)  # read in float32 (converted on the host): any device
        np.testing.assert_allclose(clreduce.rms_norm(x, w16, device=cl_device), ref(1e-6, w16), rtol=2e-5)
    assert fastpath.size() == 5


def test_in_place_out_and_bad_out_is_never_learned(cl_device, cl_queue):
    for _ in range(3):
        x = _data((4, 40), seed=3)
        want = clreduce.softmax(x.copy(), device=cl_device)
        assert clreduce.softmax(x, out=x, device=cl_device) is x  # in place: the learning run read x first
        np.testing.assert_array_equal(x, want)
    learned = fastpath.size()
    for _ in range(2):
        with pytest.raises(ValueError, match="shape"):
            clreduce.softmax(x, out=np.empty((4, 41), np.float32), device=cl_device)
        with pytest.raises(TypeError, match="dtype"):
            clreduce.softmax(x, out=np.empty((4, 40), np.float64), device=cl_device)
        with pytest.raises(TypeError):
            clreduce.moments(x, out=(np.empty(4, np.float32),), device=cl_device)
        with pytest.raises(ValueError):
            clreduce.rms_norm(x, np.ones(41, np.float32), device=cl_device)
        with pytest.raises(ValueError):
            clreduce.rms_norm(x, eps=0.0, device=cl_device)
        with pytest.raises(TypeError):
            clreduce.softmax(x.astype(np.int32), device=cl_device)
    assert fastpath.size() == learned


def test_offset_weight_is_read_from_its_first_element(cl_device, cl_queue):
    # a pyopencl view starting inside its buffer: the kernel sees no offset, so it is copied
    x = _data((3, 40), seed=4)
    big = cla.to_device(cl_queue, _data(41, seed=5))
    w = big[1:]
    want = clreduce.rms_norm(x, w.get(), device=cl_device)
    for _ in range(3):
        np.testing.assert_array_equal(clreduce.rms_norm(cla.to_device(cl_queue, x), w).get(), want)


def test_row_fast_path_is_bounded(cl_device, cl_queue, monkeypatch):
    monkeypatch.setenv("CLREDUCE_CACHE_SIZE", "3")
    for rnd in range(2):
        for k in range(5, 12):
            x = _data((2, k), seed=k)
            want = clreduce.softmax(x, device=cl_device)
            np.testing.assert_array_equal(clreduce.softmax(x, device=cl_device), want)
            assert fastpath.size() <= 3


@pytest.mark.parametrize("own_kernels", [16, 2], ids=["own-kernels", "past-the-limit"])
def test_threads_hammer_learned_row_ops(cl_device, cl_queue, own_kernels, monkeypatch):
    from clreduce.backends import cl_launch

    monkeypatch.setattr(cl_launch, "_MAX_THREADS", own_kernels)
    w = _data(64, seed=9)
    clreduce.rms_norm(cla.to_device(cl_queue, _data((16, 64), seed=0)), w)  # learned before the race
    clreduce.cumsum(_data((16, 64), "int32"), axis=-1, queue=cl_queue)

    def work(i):
        for j in range(25):
            x = _data((16, 64), seed=100 * i + j)
            got = clreduce.rms_norm(cla.to_device(cl_queue, x), w).get()
            np.testing.assert_allclose(got, x / np.sqrt(np.mean(x.astype(np.float64) ** 2, -1, keepdims=True)
                                                         + 1e-6) * w, rtol=2e-5, atol=1e-6)
            y = _data((16, 64), "int32", seed=100 * i + j)
            np.testing.assert_array_equal(clreduce.cumsum(y, axis=-1, queue=cl_queue), np.cumsum(y, -1))

    errors = hammer(work, 6, fast_switch=True)
    assert not errors, errors[0]


def test_whatever_drops_row_plans_drops_row_launchers(cl_device, cl_queue):
    from clreduce.backends import opencl, opencl_rowops

    x = _data((4, 64), seed=6)
    clreduce.softmax(x, device=cl_device)
    clreduce.sum(x, axis=1, device=cl_device)
    assert fastpath.size() == 2
    opencl_rowops.clear_caches()  # the row plans: their launchers go, the reduction's stays
    assert fastpath.size() == 1
    clreduce.softmax(x, device=cl_device)
    mode = next(p for _, (p, _) in opencl_rowops._plans.items()).sg_mode
    assert _row_entries() == 1
    opencl._drop_plans_using(None, mode)  # what marking a sub-group mode bad does
    assert _row_entries() == 0
    clreduce.softmax(x, device=cl_device)
    assert _row_entries() == 1
    opencl._kernel_cache.discard_if(lambda _key, _cached: True)  # programs evicted: who holds them goes
    assert _row_entries() == 0
    clreduce.softmax(x, device=cl_device)
    opencl.clear_caches()
    assert fastpath.size() == 0


def _row_entries() -> int:
    return sum(isinstance(e, fastpath_rows.RowEntry) for e in list(fastpath._cache._data.values()))


def test_a_launcher_keeps_no_caller_array(cl_device, cl_queue):
    x = _data((4, 64), seed=7)
    w = _data(64, seed=8)
    d = cla.to_device(cl_queue, x)
    dw = cla.to_device(cl_queue, w)
    for _ in range(3):
        clreduce.layer_norm(x, w, device=cl_device)
        clreduce.layer_norm(d, dw).finish()
    refs = [weakref.ref(a) for a in (x, w, d, dw)]
    del x, w, d, dw
    gc.collect()
    assert fastpath.size() == 2 and all(r() is None for r in refs)


# ==== CUDA GPU (the GPU machine; skipped here) ==================================================

def _cuda_unavailable() -> str | None:
    from clreduce.backends import get_backend

    return get_backend("cuda").unavailable_reason()


CUDA_REASON = _cuda_unavailable()
cuda = pytest.mark.skipif(CUDA_REASON is not None, reason=f"CUDA backend unavailable: {CUDA_REASON}")
CUDA_CASES = [  # (op, shape, dtype, keyword arguments)
    ("softmax", (1, 128), "float32", {}), ("softmax", (64, 128), "float16", {}),
    ("log_softmax", (33, 1000), "float32", {}), ("softmax", (2, 100_000), "float32", {}),  # split rows
    ("rms_norm", (64, 128), "float16", {"weight": "w16"}), ("rms_norm", (64, 128), "float32", {"weight": "w32"}),
    ("rms_norm", (64, 128), "float32", {"eps": 0.5}),
    ("layer_norm", (7, 128), "float32", {"weight": "w32", "bias": "w16", "eps": 1e-3}),
    ("layer_norm", (3, 100_000), "float16", {}),                                           # split, none cache
    ("moments", (9, 128), "float32", {}), ("absmax_scale", (9, 128), "float32", {}),
    ("quantize_int8", (9, 128), "float16", {}), ("cumsum", (9, 128), "int32", {"axis": -1}),
    # statistics the launcher casts after the kernel, as the full path does
    ("moments", (9, 128), "float16", {}), ("moments", (2, 100_000), "float16", {}),      # registers; split
    ("absmax_scale", (9, 128), "float16", {}), ("quantize_int8", (9, 128), "float64", {}),
    ("cumsum", (4, 100_000), "float32", {"axis": -1}),                                     # split scan: carries
    ("cumprod", (9, 128), "float32", {"axis": 1}), ("logcumsumexp", (1, 128), "float32", {"axis": None}),
]


def _cuda_kind(kind):
    import cupy

    if kind == "cupy":
        return cupy.asarray
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return lambda h: torch.from_numpy(np.ascontiguousarray(h)).cuda()


@cuda
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_cuda_learned_row_calls_answer_as_the_full_path(kind, monkeypatch):
    to_device = _cuda_kind(kind)
    params = {"w16": to_device(_data(128, "float16", 21)), "w32": to_device(_data(128, "float32", 22))}
    for i, (op, shape, dtype, kwargs) in enumerate(CUDA_CASES):
        x = to_device(_data(shape, dtype, seed=i))
        kwargs = {k: params.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
        f = getattr(clreduce, op)
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(x, **kwargs)
        before = fastpath.size()
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            _same(f(x, **kwargs), slow)  # learns after checking the launcher against the full path
        assert fastpath.size() == before + 1, (op, shape, dtype)
        with monkeypatch.context() as m:
            _no_full_path(m)
            fast = f(x, **kwargs)
        _same(fast, slow)
        if kind == "torch":
            for r in fast if isinstance(fast, tuple) else (fast,):
                assert r.device == x.device


@cuda
def test_cuda_torch_learned_row_call_follows_the_current_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.randn(256, 1024, device="cuda")
    w = torch.rand(1024, device="cuda", dtype=torch.float16)
    want = clreduce.rms_norm(x, w)
    clreduce.rms_norm(x, w)  # learned
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = x * 1  # written on the side stream
        got = clreduce.rms_norm(y, w)  # must run after it, on the same stream
    side.synchronize()
    torch.testing.assert_close(got, want, rtol=0, atol=0)


# (op, shape, dtype, kwargs, lean, twin): which torch launcher a learned call takes, and whether its
# result is made as the input's twin (torch.empty_like) -- the branch each case hits
TORCH_LEAN_CASES = [
    ("softmax", (64, 128), "float32", {}, True, True),                   # one output, the input's twin
    ("log_softmax", (5, 1000), "float16", {}, True, True),
    ("rms_norm", (64, 128), "float32", {"weight": "w16"}, True, True),   # weight converted per call
    ("layer_norm", (7, 128), "float16", {"weight": "w16", "bias": "w32"}, True, True),
    ("cumsum", (9, 128), "int32", {"axis": -1}, True, False),            # int64 rows: new_empty
    ("cumsum", (3, 128), "float32", {"axis": None}, True, False),        # flattened rows: new_empty
    ("moments", (9, 128), "float32", {}, False, False),                  # statistics: torch_call
    ("layer_norm", (3, 100_000), "float16", {}, False, False),           # split rows' partials: torch_call
]


@cuda
@pytest.mark.parametrize("op,shape,dtype,kwargs,lean,twin", TORCH_LEAN_CASES)
def test_cuda_torch_lean_calls_make_fresh_results_like_the_full_path(op, shape, dtype, kwargs, lean, twin,
                                                                    monkeypatch):
    """A learned torch call whose plan makes only its output takes RowLauncher.torch_lean
    (row_fast.py), which makes that output with ``torch.empty_like`` where the rows are the
    input's twin. Its results must be what the full path gives: values bit for bit, shape,
    dtype and strides, a new tensor each call, never the input's memory, no grad."""
    import torch

    to_device = _cuda_kind("torch")
    params = {"w16": to_device(_data(shape[-1], "float16", 21)), "w32": to_device(_data(shape[-1], "float32", 22))}
    kwargs = {k: params.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    f = getattr(clreduce, op)
    # C order, and the same bytes behind strides that are not C's (size-1 axis, stride 7):
    # both contiguous to torch; only the first may take empty_like's strides
    xs = [to_device(_data(shape, dtype, seed=3))]
    odd = torch.empty_strided((shape[0], 1, shape[1]), (shape[1], 7, 1), dtype=xs[0].dtype, device="cuda")
    odd.copy_(xs[0].reshape(odd.shape))
    if kwargs.get("axis") is not None or op != "cumsum":
        xs.append(odd)
    for x in xs:
        assert x.is_contiguous()
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(x, **kwargs)
        f(x, **kwargs)  # learned
        key = fastpath_rows.signature(op, x, kwargs.get("axis", -1), kwargs.get("weight"), kwargs.get("bias"),
                                      kwargs.get("eps", rowops_eps(op)), None, None, None, None, None)
        launcher = fastpath_rows.lookup(key).launch
        assert launcher.__name__ == ("torch_lean" if lean else "torch_call"), (op, shape)
        assert launcher.__self__.like == (twin and x is xs[0]), (op, shape)
        with monkeypatch.context() as m:
            _no_full_path(m)
            first, second = f(x, **kwargs), f(x, **kwargs)
        for fast in (first, second):
            _same(fast, slow)
            for got, want in zip(fast if isinstance(fast, tuple) else (fast,), slow if isinstance(slow, tuple) else (slow,)):
                assert got.shape == want.shape and got.dtype == want.dtype and got.stride() == want.stride()
                assert got.is_contiguous() and not got.requires_grad and got.device == x.device
                assert got.data_ptr() != x.data_ptr()
        one = first if not isinstance(first, tuple) else first[0]
        two = second if not isinstance(second, tuple) else second[0]
        assert one.data_ptr() != two.data_ptr()  # both alive: two tensors


@cuda
def test_cuda_cupy_lean_calls_make_fresh_results_like_the_full_path(monkeypatch):
    """cupy's learned calls: the lean call where the plan makes only its output, torch_call's
    cupy twin where it makes statistics too; results as the full path's, a new array each call."""
    to_device = _cuda_kind("cupy")
    w = to_device(_data(128, "float16", 21))
    for op, kwargs, lean in (("softmax", {}, True), ("rms_norm", {"weight": w}, True), ("moments", {}, False)):
        x = to_device(_data((64, 128), "float32", seed=4))
        f = getattr(clreduce, op)
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(x, **kwargs)
        f(x, **kwargs)  # learned
        key = fastpath_rows.signature(op, x, -1, kwargs.get("weight"), None, rowops_eps(op), None, None, None,
                                      None, None)
        assert fastpath_rows.lookup(key).launch.__name__ == ("cupy_lean" if lean else "cupy_call"), op
        with monkeypatch.context() as m:
            _no_full_path(m)
            first, second = f(x, **kwargs), f(x, **kwargs)
        for fast in (first, second):
            _same(fast, slow)
        one = first if not isinstance(first, tuple) else first[0]
        two = second if not isinstance(second, tuple) else second[0]
        assert len({one.data.ptr, two.data.ptr, x.data.ptr}) == 3


def rowops_eps(op):
    """The default eps each op's signature holds (rms_norm 1e-6, layer_norm 1e-5, else None)."""
    return {"rms_norm": 1e-6, "layer_norm": 1e-5}.get(op)


@cuda
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_cuda_threads_hammer_learned_row_ops(kind):
    to_device = _cuda_kind(kind)
    hosts = [_data((16, 300), seed=s) for s in range(6)]
    arrays = [to_device(h) for h in hosts]
    wants = [_host(clreduce.softmax(a)) for a in arrays]
    clreduce.softmax(arrays[0])  # learned

    def work(i):
        for r in range(40):
            j = (i + r) % len(arrays)
            np.testing.assert_array_equal(_host(clreduce.softmax(arrays[j])), wants[j])

    errors = hammer(work, 6, with_main=True)
    assert not errors and fastpath.size() == 1, errors[:1]


def test_a_launcher_that_answers_differently_is_never_used(cl_device, cl_queue, monkeypatch):
    """The first run of every launcher is compared with the full path's result: one that
    differs warns and its signature keeps the full path (here a launcher made to be off by
    one ulp in one element)."""
    from clreduce.backends import opencl_rowops

    real = opencl_rowops.fast_launcher

    def off_by_one_ulp(*args, **kwargs):
        launch = real(*args, **kwargs)

        def wrong(x, weight, bias, queue):
            result = launch(x, weight, bias, queue)
            result.flat[0] = np.nextafter(result.flat[0], np.inf)
            return result
        return wrong

    monkeypatch.setattr(opencl_rowops, "fast_launcher", off_by_one_ulp)
    x = _data((4, 40), seed=13)
    with monkeypatch.context() as m:
        m.setenv("CLREDUCE_FAST_PATH", "0")
        want = clreduce.softmax(x, device=cl_device)
    for _ in range(2):  # each call would learn: it warns instead
        with pytest.warns(RuntimeWarning, match="answered differently"):
            np.testing.assert_array_equal(clreduce.softmax(x, device=cl_device), want)
    assert fastpath.size() == 0


@pytest.mark.parametrize("op", ["softmax", "moments", "quantize_int8", "cumsum"])
def test_pooled_row_results_stay_right_and_never_alias(cl_device, cl_queue, monkeypatch, op):
    """GPUs take learned row ops' results and scratch from cl_pool (this CPU device is forced
    into the GPUs' mode): results held across later calls keep their values, dropped ones
    serve later calls, and pool off gives the same bits."""
    from clreduce.backends import cl_pool, opencl

    def call(d):
        return clreduce.cumsum(d, axis=-1) if op == "cumsum" else getattr(clreduce, op)(d)

    def fetch(r):
        return [a.get() for a in r] if isinstance(r, tuple) else [r.get()]

    xs = [_data((6, 300), seed=20 + s) for s in range(6)]
    opencl.clear_caches()
    monkeypatch.setattr(cl_pool, "mode_override", "off")
    want = [fetch(call(cla.to_device(cl_queue, x))) for x in xs]
    opencl.clear_caches()
    monkeypatch.setattr(cl_pool, "mode_override", "reuse")
    before = cl_pool.stats()["reused"]
    held = []
    for rnd in range(3):
        for i, x in enumerate(xs):
            r = call(cla.to_device(cl_queue, x))
            if rnd == 0 and i % 2 == 0:
                held.append((i, r))  # kept while later calls run
            else:
                for got, ref in zip(fetch(r), want[i]):
                    np.testing.assert_array_equal(got, ref)
                del r  # dropped: its buffers may serve a later call
    for i, r in held:
        for got, ref in zip(fetch(r), want[i]):
            np.testing.assert_array_equal(got, ref)
    assert cl_pool.stats()["reused"] > before  # the pool did serve later calls
    opencl.clear_caches()


def test_cpu_devices_pool_large_row_results_only(cl_device, cl_queue, monkeypatch):
    """CPU devices run cl_pool in its "large" mode: a learned row op on a pyopencl array takes
    results of cl_pool.LARGE_MIN_BYTES and more from the pool (a fresh buffer faults in its
    pages: 64 MB softmax results cost Intel's runtime 55 ms a call against 28 reused), and a
    dropped one serves the next call; smaller results are plain buffers, never tracked. Held
    results keep their values across the calls that reuse the dropped ones."""
    from clreduce.backends import cl_pool, opencl

    if not cl_queue.device.type & cl.device_type.CPU:
        pytest.skip("a GPU runs the pool in its reuse mode (test_pooled_row_results_...)")
    assert cl_pool.mode_for(cl_queue.context, cl_queue) == "large"
    monkeypatch.setattr(cl_pool, "LARGE_MIN_BYTES", 64 << 10)  # small arrays stand in for large ones
    opencl.clear_caches()
    small = [_data((4, 300), seed=40 + s) for s in range(2)]  # 4.7 KB results: plain
    large = [_data((64, 300), seed=50 + s) for s in range(3)]  # 75 KB results: pooled
    for x in small:
        for _ in range(3):
            np.testing.assert_array_equal(clreduce.softmax(cla.to_device(cl_queue, x)).get(),
                                          clreduce.softmax(x, device=cl_device))
    assert cl_pool.stats()["slots"] == 0
    want = [clreduce.softmax(x, device=cl_device) for x in large]
    held, before = [], cl_pool.stats()["reused"]
    for rnd in range(3):
        for i, x in enumerate(large):
            r = clreduce.softmax(cla.to_device(cl_queue, x))
            if rnd == 0 and i == 1:
                held.append(r)  # kept while later calls reuse the dropped ones
            else:
                np.testing.assert_array_equal(r.get(), want[i])
                del r
    np.testing.assert_array_equal(held[0].get(), want[1])
    assert 0 < cl_pool.stats()["slots"] <= cl_pool.MAX_SLOTS
    assert cl_pool.stats()["reused"] > before
    opencl.clear_caches()


# ---- out= takes the rows without a copy (backends/out_dest.py) ------------------------------
def _count_copies(monkeypatch) -> list:
    """The ``what`` of each rowops._check_out call ("out", "out[0]", ...): made where a result
    is copied into out=, and once more by a learning call before it learns."""
    calls = []
    real = rowops._check_out

    def spy(out, result, op, what="out"):
        calls.append(what)
        return real(out, result, op, what)

    monkeypatch.setattr(rowops, "_check_out", spy)
    return calls


def test_span_is_numpy_byte_bounds():
    """out_dest._span gives the bytes a strided array touches, as numpy computes them (a
    wrong span would let a kernel write over an input it still reads)."""
    from clreduce.backends.out_dest import _span

    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # numpy < 2
        byte_bounds = np.byte_bounds
    base = np.arange(4 * 6 * 10, dtype=np.float32).reshape(4, 6, 10)
    views = [base, base[1:3], base[:, ::2], base[::-1], base[:, :, ::-3], base.transpose(2, 0, 1)[3:, ::-1],
             base[2, 3], base[2, 3, 4:5], base[:0], base.astype(np.float16)[:, 1::2, ::-2]]
    for v in views:
        lo, hi = _span(v.ctypes.data, v.shape, v.strides, v.itemsize)
        if v.size == 0:
            assert lo == hi
        else:
            assert (lo, hi) == byte_bounds(v), v.shape


# rows long enough that the planner splits them (two launches: the second reads the row again)
OUT_CASES = [("softmax", (3, 40), {}), ("rms_norm", (3, 40), {"weight": W}),
             ("layer_norm", (2, 70_000), {}),                              # split rows, cache none
             ("cumsum", (3, 40), {"axis": -1}), ("absmax_scale", (3, 40), {})]


@pytest.mark.parametrize("op, shape, kwargs", OUT_CASES, ids=[c[0] + "x".join(map(str, c[1])) for c in OUT_CASES])
def test_pyopencl_out_takes_the_rows_without_a_copy(cl_device, cl_queue, monkeypatch, op, shape, kwargs):
    x_host = _data(shape, seed=31)
    x = cla.to_device(cl_queue, x_host)
    f = getattr(clreduce, op)
    want = [_host(r) for r in (lambda r: r if isinstance(r, tuple) else (r,))(f(x, **kwargs))]
    copies = _count_copies(monkeypatch)
    for i in range(3):  # the first call learns, the others run learned
        rows = cla.empty(cl_queue, shape, np.float32)
        out = (rows, cla.empty(cl_queue, shape[:-1], np.float32)) if op == "absmax_scale" else rows
        got = f(x, out=out, **kwargs)
        assert got is out or got == out
        np.testing.assert_array_equal(rows.get(), want[0])
        if op == "absmax_scale":
            np.testing.assert_array_equal(out[1].get(), want[1])
    # learned calls wrote the rows in place: only the learning call checked (twice) and copied
    assert copies.count("out") + copies.count("out[0]") == 2, copies
    np.testing.assert_array_equal(x.get(), x_host)


# (op, input shape, dtype, kwargs, element offset of out= in its allocation): rows of at least
# cl_host.ZERO_COPY_MIN_BYTES are wrapped in place where the device shares host memory (every
# device here), smaller ones read straight into out=; an offset of 1 puts out= off every
# alignment but its element's (Intel's runtime then keeps a device-side copy of the wrapped
# memory and writes it back on the map: the bytes around out= must stay as they were)
NUMPY_OUT_CASES = [("softmax", (300, 128), "float32", {}, 0),            # wrapped
                   ("softmax", (300, 128), "float32", {}, 1),            # wrapped, off alignment
                   ("log_softmax", (3, 40), "float32", {}, 1),           # small: read into out=
                   ("rms_norm", (250, 40), "float16", {"weight": W.astype(np.float16)}, 3),
                   ("layer_norm", (2, 70_000), "float32", {}, 1),        # split rows: two launches
                   ("cumsum", (300, 40), "float32", {"axis": -1}, 0),
                   ("absmax_scale", (300, 40), "float32", {}, 1)]       # two results: rows into out[0]


@pytest.mark.parametrize("op, shape, dtype, kwargs, lead", NUMPY_OUT_CASES,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[2]}-off{c[4]}" for c in NUMPY_OUT_CASES])
def test_numpy_out_takes_the_rows_without_a_copy(cl_device, monkeypatch, op, shape, dtype, kwargs, lead):
    x = _data(shape, dtype, seed=33)
    x_before = x.copy()
    f = getattr(clreduce, op)
    want = [np.asarray(r) for r in (lambda r: r if isinstance(r, tuple) else (r,))(f(x, device=cl_device, **kwargs))]
    size = int(np.prod(shape))
    copies = _count_copies(monkeypatch)
    for i in range(3):  # the first call learns, the others run learned
        space = np.full(size + lead + 40, -7.0, dtype)  # the guard: out='s neighbours
        rows = space[lead:lead + size].reshape(shape)
        out = (rows, np.empty(shape[:-1], want[1].dtype)) if op == "absmax_scale" else rows
        got = f(x, out=out, device=cl_device, **kwargs)
        assert got is out or (type(got) is tuple and all(g is o for g, o in zip(got, out)))
        np.testing.assert_array_equal(rows, want[0], err_msg=f"call {i}")
        if op == "absmax_scale":
            np.testing.assert_array_equal(out[1], want[1])
        assert (space[:lead] == -7).all() and (space[lead + size:] == -7).all(), f"call {i}: out='s neighbours"
    # learned calls wrote the rows into out= itself: only the learning call checked (twice) and copied
    assert copies.count("out") + copies.count("out[0]") == 2, copies
    np.testing.assert_array_equal(x, x_before)


def test_numpy_out_that_overlaps_the_input_or_is_read_only_is_not_written_in_place(cl_device, monkeypatch):
    """A numpy out= sharing memory with the input (in place, or rows shifted by one) keeps the
    copy and answers as a fresh out= would (the split rows' second launch reads the row
    again); a read-only out= raises numpy's ValueError on learned calls too."""
    x_host = _data((4, 70_000), seed=34)
    copies = _count_copies(monkeypatch)
    for op in ("softmax", "rms_norm"):
        f = getattr(clreduce, op)
        want = f(x_host[:3], device=cl_device)
        for _ in range(3):
            base = x_host.copy()
            f(base[:3], out=base[:3], device=cl_device)                 # in place
            np.testing.assert_array_equal(base[:3], want, err_msg=f"{op} in place")
            base = x_host.copy()
            f(base[:3], out=base[1:], device=cl_device)                 # rows shifted by one
            np.testing.assert_array_equal(base[1:], want, err_msg=f"{op} shifted")
    assert len(copies) == 2 * 3 * 2 + 2, copies
    frozen = np.full((4, 70_000), 5.0, np.float32)
    frozen.flags.writeable = False
    for _ in range(3):
        with pytest.raises(ValueError):
            clreduce.softmax(x_host, out=frozen, device=cl_device)
    assert (frozen == 5.0).all()


def test_pyopencl_out_that_overlaps_the_input_is_copied(cl_device, cl_queue, monkeypatch):
    """out= sharing the input's buffer (in place, or rows shifted by one) and out= starting
    inside its buffer keep the copy, and answer as with a fresh out=: the split rows' second
    launch reads the row again after other work-groups wrote their chunks."""
    shape = (3, 70_000)
    x_host = _data((4, 70_000), seed=32)
    copies = _count_copies(monkeypatch)
    for op in ("softmax", "rms_norm", "cumsum"):
        f = getattr(clreduce, op)
        kw = {"axis": -1} if op == "cumsum" else {}
        want = f(x_host[:3], device=cl_device, **kw)
        for _ in range(3):
            base = cla.to_device(cl_queue, x_host)
            assert f(base[:3], out=base[:3], **kw) is not None          # in place
            np.testing.assert_array_equal(base.get()[:3], want, err_msg=f"{op} in place")
            base = cla.to_device(cl_queue, x_host)
            got = f(base[:3], out=base[1:], **kw)                          # rows shifted by one, offset
            assert got.offset == base[1:].offset
            np.testing.assert_array_equal(base.get()[1:], want, err_msg=f"{op} shifted")
    # every call copied: 3 ops x 3 rounds x 2 calls, and each op's learning call (both kinds
    # of out= share a signature) checked once more
    assert len(copies) == 3 * 3 * 2 + 3, copies


@cuda
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_cuda_out_takes_the_rows_without_a_copy(kind, monkeypatch):
    """cupy / torch out= receives the rows from the kernels (learned calls; torch's softmax
    and norms from the first call, backends/cuda/rowops.torch_rows); out= that overlaps the
    input (in place, rows shifted by one) is copied and answers as a fresh one would, split
    rows included (their second launch reads the row again)."""
    to_device = _cuda_kind(kind)
    copies = _count_copies(monkeypatch)
    for op, shape, kwargs in OUT_CASES:
        x = to_device(_data(shape, seed=33))
        kwargs = {k: to_device(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        f = getattr(clreduce, op)
        want = f(x, **kwargs)
        want = [_host(r) for r in (want if isinstance(want, tuple) else (want,))]
        del copies[:]
        for _ in range(3):
            rows = to_device(np.empty(shape, np.float32))
            out = (rows, to_device(np.empty(shape[:-1], np.float32))) if op == "absmax_scale" else rows
            got = f(x, out=out, **kwargs)
            assert got is out or all(a is b for a, b in zip(got, out))
            np.testing.assert_array_equal(_host(rows), want[0], err_msg=op)
        # the learning call checks out= before it learns, and copies unless it wrote in place
        direct_first = kind == "torch" and op in ("softmax", "rms_norm", "layer_norm")
        assert copies.count("out") + copies.count("out[0]") == (1 if direct_first else 2), (op, copies)
    for op in ("softmax", "rms_norm", "cumsum"):
        f = getattr(clreduce, op)
        kw = {"axis": -1} if op == "cumsum" else {}
        host = _data((4, 70_000), seed=34)
        want = _host(f(to_device(host[:3]), **kw))
        for _ in range(3):
            base = to_device(host)
            f(base[:3], out=base[:3], **kw)
            np.testing.assert_array_equal(_host(base)[:3], want, err_msg=f"{op} in place")
            base = to_device(host)
            f(base[:3], out=base[1:], **kw)
            np.testing.assert_array_equal(_host(base)[1:], want, err_msg=f"{op} shifted")
