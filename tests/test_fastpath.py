"""The per-call fast path (clreduce/fastpath.py): same answers and errors as the full path.

No device needed: signatures (what tells calls apart), which traces are learned, the CUDA
launcher's argument marshalling (with stand-ins for cupy and torch), the bound.
Per OpenCL device: a learned call answers bit-for-bit as the full path (CLREDUCE_FAST_PATH=0)
for numpy and pyopencl inputs, and really is served without the full path; changes of
shape/dtype/axis between calls, ``out=`` reuse, freed arrays whose memory comes back,
another queue or context with the same shape, threads hammering one learned signature;
errors stay errors after a similar call was learned; whatever drops plans drops launchers;
the GPU buffer pool (backends/cl_pool.py, forced on for the CPU devices): pooled results of
back-to-back calls on two queues and threads stay right, a buffer is not rewritten while an
alias handle or (where the driver shows it) a pending read on another queue uses it, the
bound, clear_caches, and a dropped context is released.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import types
import warnings

import numpy as np
import pytest
from fast_helpers import fresh_fast_path, hammer  # noqa: F401 - fresh_fast_path: an autouse fixture
from fast_helpers import host as _host
from fast_helpers import same as _same

import clreduce
from clreduce import api, fastpath
from clreduce.fastpath_rows import to_numpy
from clreduce.plan import Force, Problem

try:
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover
    from numpy import AxisError

try:  # the OpenCL tests take ``cl_device``: without pyopencl they have no devices and skip
    import pyopencl as cl
    import pyopencl.array as cla
except ImportError:  # e.g. the GPU machine, where the CUDA tests below run
    cl = cla = None


def _key(a, axis=None, **kw):
    args = dict(dtype=None, out=None, keepdims=False, ddof=0.0, single_axis=False, backend=None, force=None, where={})
    args.update(kw)
    return fastpath.signature("sum", "sum", a, axis, args["dtype"], args["out"], args["keepdims"], args["ddof"],
                              args["single_axis"], args["backend"], args["force"], args["where"])


# ==== no device ================================================================================

def test_signature_tells_apart_what_changes_the_answer_or_the_error():
    x = np.zeros((4, 6), np.float32)
    base = _key(x, axis=1)
    assert base is not None and base == _key(np.ones((4, 6), np.float32), axis=1)
    different = [
        _key(np.zeros((4, 7), np.float32), axis=1), _key(np.zeros((4, 6), np.float64), axis=1),
        _key(np.zeros((6, 4), np.float32).T, axis=1),                     # strides
        _key(x, axis=True), _key(x, axis=np.int64(1)), _key(x, axis=(1,)), _key(x, axis=(True,)),
        _key(x, axis=1, keepdims=1.0), _key(x, axis=1, keepdims=True), _key(x, axis=1, dtype="float64"),
        _key(x, axis=1, out=np.zeros(4, np.float64)), _key(x, axis=1, force=Force(vec=4)),
        _key(x, axis=1, backend="opencl"), _key(x, axis=1, ddof=1.0),
        # every plan knob: a Force differing only in lanes, unroll or split is another plan
        _key(x, axis=1, force=Force(lanes=8)), _key(x, axis=1, force=Force(lanes=16)),
        _key(x, axis=1, force=Force(unroll=2)), _key(x, axis=1, force=Force(split=4)),
        _key(x, axis=1, dtype=np.float64), _key(x, axis=1, dtype=np.dtype("float64")),
    ]
    assert all(k is not None for k in different)
    assert len({base, *different}) == len(different) + 1
    # keepdims=True and keepdims=1 mean the same but stay apart (each learned on its own)
    assert _key(x, axis=1, keepdims=True) != _key(x, axis=1, keepdims=1)


def test_uncacheable_calls_have_no_signature():
    x = np.zeros((4, 6), np.float32)
    assert _key(x, axis=[1]) is None                               # unhashable: the slow path raises
    assert _key(x, axis=1, force={"vec": 4}) is None               # a dict becomes a Force per call
    assert _key(x.astype(">f4"), axis=1) is None                   # byte-swapped: converted per call
    assert _key([[1.0, 2.0]], axis=1) is None                      # not an array
    assert _key(np.matrix(x), axis=1) is None                      # subclasses keep numpy's own rules
    assert _key(x, axis=1, where={"stream": object()}) is None     # unknown option objects
    assert _key(x, axis=1, out=object()) is None                   # out= without shape/dtype: slow path's TypeError


def test_environment_and_tune_state_are_part_of_the_signature(monkeypatch):
    from clreduce import tuning

    x = np.zeros((4, 6), np.float32)
    before = _key(x, axis=1)
    monkeypatch.setenv("CLREDUCE_VEC", "4")
    assert _key(x, axis=1) != before
    monkeypatch.delenv("CLREDUCE_VEC")
    assert _key(x, axis=1) == before
    with tuning.suspended():
        assert _key(x, axis=1) != before
    monkeypatch.setattr(tuning, "_generation", [tuning.generation() + 1])
    assert _key(x, axis=1) != before
    monkeypatch.setenv("CLREDUCE_FAST_PATH", "0")
    assert _key(x, axis=1) is None


def _fake(module: str, name: str, **attrs):
    cls = type(name, (), {"__module__": module})
    obj = cls()
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


def test_cuda_array_kinds_are_described_without_importing_them():
    cupy_like = _fake("cupy", "ndarray", shape=(1, 128), strides=(512, 4), dtype=np.dtype("float32"),
                      device=types.SimpleNamespace(id=1))
    other_device = _fake("cupy", "ndarray", shape=(1, 128), strides=(512, 4), dtype=np.dtype("float32"),
                         device=types.SimpleNamespace(id=0))
    assert _key(cupy_like) is not None and _key(cupy_like) != _key(other_device)
    # as CuPy has it: the memory pointer knows its device (read instead of building a Device)
    on_1 = _fake("cupy", "ndarray", shape=(1, 128), strides=(512, 4), dtype=np.dtype("float32"),
                 data=types.SimpleNamespace(ptr=64, device_id=1))
    on_0 = _fake("cupy", "ndarray", shape=(1, 128), strides=(512, 4), dtype=np.dtype("float32"),
                 data=types.SimpleNamespace(ptr=64, device_id=0))
    described = [_key(a)[2][1:] for a in (on_1, cupy_like, on_0, other_device)]  # [0]: each fake's own class
    assert described[0] == described[1] and described[2] == described[3] and described[0] != described[2]
    torch_like = _fake("torch", "Tensor", shape=(1, 128), dtype="torch.float32", is_cuda=True,
                       get_device=lambda: 0, stride=lambda: (128, 1), is_neg=lambda: False)
    assert _key(torch_like) is not None and _key(torch_like) != _key(cupy_like)
    negated = _fake("torch", "Tensor", shape=(1, 128), dtype="torch.float32", is_cuda=True,
                    get_device=lambda: 0, stride=lambda: (128, 1), is_neg=lambda: True)
    assert _key(negated) != _key(torch_like)
    torch_like.is_cuda = False
    assert _key(torch_like) is None  # a CPU tensor goes through numpy: slow path


class _Chosen:
    name = "fake"

    def __init__(self):
        self.built = []

    def fast_launcher(self, a, native, problem, force, out_shape, where, expected):
        self.built.append(out_shape)
        return lambda arr, where: np.full(out_shape, 7.0, np.float32)

    def write_out(self, out, result):
        out[...] = result


def _trace(raw, delivered, *, in_place=True, runs=1, refused=False):
    trace = fastpath.Trace()
    trace.chosen, trace.native = _Chosen(), raw
    trace.runs = [[in_place, Problem(rows=2, row_len=3, dtype="float32", op="sum"), raw] for _ in range(runs)]
    trace.delivered, trace.refused = delivered, refused
    return trace


def test_only_a_single_in_place_launch_delivered_unchanged_is_learned():
    raw = np.arange(4, dtype=np.float32)
    x = np.zeros((4, 3), np.float32)
    refused = [
        _trace(raw, raw.astype(np.float64)),          # cast on the host
        _trace(raw, raw / 2),                         # computed on the host (same dtype, new memory)
        _trace(raw, raw, in_place=False),             # the kernels read a copy
        _trace(raw, raw, runs=2),                     # two launches (var into a narrower out=, ...)
        _trace(raw, raw, refused=True),               # warns on every call
        _trace(raw, None),                            # empty reduction: no launch
    ]
    for i, trace in enumerate(refused):
        fastpath.learn(("k", i), trace, x, None, {})
    assert fastpath.size() == 0
    good = _trace(raw, raw.reshape(2, 2))               # a reshape of the device result
    fastpath.learn(("k", "good"), good, x, None, {})
    assert good.chosen.built == [(2, 2)] and fastpath.size() == 1
    scalar = _trace(raw[:1], raw[:1].reshape(()))
    fastpath.learn(("k", "scalar"), scalar, x, None, {})
    assert fastpath.lookup(("k", "scalar"))(x, None, {}) == 7.0  # numpy 0-d comes back as a scalar
    out = np.zeros((2, 2), np.float32)
    assert fastpath.lookup(("k", "good"))(x, out, {}) is out and (out == 7.0).all()


def test_fast_path_cache_is_bounded(monkeypatch):
    monkeypatch.setenv("CLREDUCE_CACHE_SIZE", "4")
    raw = np.arange(4, dtype=np.float32)
    for i in range(20):
        fastpath.learn(("k", i), _trace(raw, raw), raw, None, {})
        assert fastpath.size() <= 4
    assert fastpath.lookup(("k", 19)) is not None and fastpath.lookup(("k", 0)) is None


_C_TYPES = {"u64": ctypes.c_uint64, "f32": ctypes.c_float, "f16": ctypes.c_uint16}


class _FakeFunction:
    """A compiled kernel as the launcher sees it: ``ptr`` (its CUfunction handle), and
    here also how to read its parameters back out of a cuLaunchKernel parameter block."""

    def __init__(self, ptr, name, arg_types):
        self.ptr, self.name, self.arg_types = ptr, name, arg_types


def _read_params(params: int, arg_types) -> tuple:
    """The argument values a cuLaunchKernel parameter block points at."""
    values = []
    for i, kind in enumerate(arg_types):
        slot = ctypes.c_void_p.from_address(params + 8 * i).value
        values.append(_C_TYPES[kind].from_address(slot).value)
    return tuple(values)


class _FakeCupy:
    """What the CUDA launcher uses of cupy: ndarray, alloc, the current device and stream,
    Device(...), setDevice/free (a thread's context), driver.launchKernel (logged)."""

    def __init__(self, functions, current=0, stream=0):
        self.current, self.stream = current, stream
        self.switches, self.log, self.allocs, self.context_inits = [], [], [], []
        by_ptr = {f.ptr: f for f in functions}
        fake = self

        class Device:
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                fake.switches.append(self.i)
                self.saved, fake.current = fake.current, self.i

            def __exit__(self, *exc):
                fake.current = self.saved

        def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            fn = by_ptr[f]
            fake.log.append((fn.name, (gx, gy, gz), (bx, by, bz), shared, stream, extra,
                             _read_params(params, fn.arg_types), fake.current))

        def set_device(i):
            fake.current = i

        def alloc(nbytes):
            fake.allocs.append(("alloc", nbytes, fake.current))
            return types.SimpleNamespace(ptr=7000 + len(fake.allocs))

        class ndarray:
            def __init__(self, shape, dtype):
                fake.allocs.append(("ndarray", shape, np.dtype(dtype).name, fake.current))
                self.shape, self.dtype = shape, dtype
                self.data = types.SimpleNamespace(ptr=8000 + len(fake.allocs))

        self.ndarray = ndarray
        self.cuda = types.SimpleNamespace(
            Device=Device, alloc=alloc, driver=types.SimpleNamespace(launchKernel=launch),
            stream=types.SimpleNamespace(get_current_stream_ptr=lambda: fake.stream),
            runtime=types.SimpleNamespace(getDevice=lambda: fake.current, setDevice=set_device,
                                          free=lambda ptr: fake.context_inits.append((ptr, fake.current))))


def _fake_input(ptr):
    return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr))


def test_cuda_launcher_passes_buffers_scalars_and_streams_without_a_gpu():
    from clreduce.backends.cuda.fast import Launcher

    pass1 = _FakeFunction(0x100, "pass1", ["u64", "u64", "u64", "u64", "u64", "f32"])
    pass2 = _FakeFunction(0x200, "pass2", ["u64", "u64", "u64", "u64", "u64"])
    base = types.SimpleNamespace(
        out_dtype=np.dtype("float32"), partials_bytes=96,
        steps=((pass1, (3,), (256,), "input", "partials", (np.uint64(1000), np.float32(0.5))),
               (pass2, (1,), (64,), "partials", "output", (np.uint64(3),))))
    cupy = _FakeCupy([pass1, pass2], current=1, stream=0x5150)
    launcher = Launcher(base, cupy, 1, (2, 1))
    out = launcher.cupy_array(_fake_input(4321), {})
    assert out.shape == (2, 1) and cupy.switches == []
    assert cupy.allocs == [("ndarray", (2, 1), "float32", 1), ("alloc", 96, 1)]
    assert cupy.context_inits == [(0, 1)]  # this thread's first call makes the context current
    partials, out_ptr = 7002, out.data.ptr
    assert cupy.log == [
        ("pass1", (3, 1, 1), (256, 1, 1), 0, 0x5150, 0, (4321, 0, partials, 0, 1000, 0.5), 1),
        ("pass2", (1, 1, 1), (64, 1, 1), 0, 0x5150, 0, (partials, 0, out_ptr, 0, 3), 1)]
    cupy.current = 0  # another device is current: switch for the call, then back
    cupy.log.clear()
    launcher.cupy_array(_fake_input(99), {})
    assert cupy.switches == [1] and cupy.current == 0 and [entry[-1] for entry in cupy.log] == [1, 1]
    assert cupy.log[0][6][0] == 99 and len(cupy.context_inits) == 1  # the slots are rewritten, made once

    # another thread gets its own parameter blocks (and context): the two never share slots
    seen = []

    def other():
        cupy.current = 1
        launcher.cupy_array(_fake_input(555), {})
        seen.append(cupy.log[-2][6][0])

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [555] and len(cupy.context_inits) == 2


def test_cuda_launcher_for_torch_uses_pointers_and_torchs_stream():
    from clreduce.backends.cuda.fast import Launcher

    allocated = []

    class Tensor:
        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

        def new_empty(self, shape, dtype):  # on the input's device, as torch's does
            allocated.append((shape, dtype, self.ptr))
            return Tensor(5000 + len(allocated))

    torch = types.SimpleNamespace(float16="torch.float16", uint8="torch.uint8", bool="torch.bool",
                                  device=lambda kind, i: f"{kind}:{i}",
                                  _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0xabc0 + i))
    only = _FakeFunction(0x300, "only", ["u64", "u64", "u64", "u64", "f16"])
    base = types.SimpleNamespace(out_dtype=np.dtype("float16"), partials_bytes=0,
                                 steps=((only, (1,), (128,), "input", "output", (np.float16(1.0),)),))
    cupy = _FakeCupy([only], current=0, stream=0x999)
    launcher = Launcher(base, cupy, 0, (), torch)
    out = launcher.torch_tensor(Tensor(1234), {})
    assert allocated == [((), "torch.float16", 1234)] and out.ptr == 5001 and cupy.allocs == []
    (name, grid, block, shared, stream, extra, args, device), = cupy.log
    # torch's current stream, not CuPy's; the float16 scalar passed as its 2 bytes
    assert stream == 0xabc0 and args == (1234, 0, 5001, 0, int(np.float16(1.0).view(np.uint16)))


def test_cuda_launcher_must_answer_as_the_full_path_before_it_is_used(monkeypatch):
    """The CUDA launcher cannot be run on this machine's CI: each one is checked once on the
    GPU against the full path's result, and one that differs is never used. Here the
    "kernel" reads and writes host memory through the pointers it is launched with."""
    from clreduce.backends import cuda
    from clreduce.backends.cuda import fast

    def address(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    cupy_array = type("ndarray", (np.ndarray,), {"__module__": "cupy", "device": types.SimpleNamespace(id=0),
                                                 "data": property(address)})
    row_sums = _FakeFunction(0x400, "row_sums", ["u64", "u64", "u64", "u64"])
    fake_cupy = _FakeCupy([row_sums])
    fake_cupy.ndarray = lambda shape, dtype: np.zeros(shape, dtype).view(cupy_array)
    bias = [0.0]

    def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        src, _, dst, _ = _read_params(params, row_sums.arg_types)
        x = np.ctypeslib.as_array((ctypes.c_float * 6).from_address(src)).reshape(2, 3)
        np.ctypeslib.as_array((ctypes.c_float * 2).from_address(dst))[:] = x.sum(axis=-1) + bias[0]

    fake_cupy.cuda.driver.launchKernel = launch
    fake_cupy.asnumpy = np.asarray

    class Device:
        def __init__(self, i):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def synchronize(self):
            pass

    fake_cupy.cuda.Device = Device
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    base = types.SimpleNamespace(out_dtype=np.dtype("float32"), partials_bytes=0,
                                 steps=((row_sums, (1,), (32,), "input", "output", ()),))
    monkeypatch.setattr(cuda, "_launcher", lambda device_id, problem, force: base)
    monkeypatch.setattr(cuda, "_merged_force", lambda force: force)
    a = np.arange(6, dtype=np.float32).reshape(2, 3).view(cupy_array)
    problem = Problem(rows=2, row_len=3, dtype="float32", op="sum")
    expected = np.array([3.0, 12.0], np.float32)
    launch = fast.fast_launcher(a, a, problem, None, (2,), {}, expected)
    assert launch is not None
    np.testing.assert_array_equal(launch(a, {}), expected)
    b = (a * 2).view(cupy_array)  # another array: the launcher reads the new pointer
    np.testing.assert_array_equal(launch(b, {}), 2 * expected)
    bias[0] = 1.0  # a launcher that answers differently
    with pytest.warns(RuntimeWarning, match="answered differently"):
        assert fast.fast_launcher(a, a, problem, None, (2,), {}, expected) is None
    assert fast.fast_launcher(a, a, problem, None, (2,), {"stream": 7}, expected) is None  # explicit stream


# ==== OpenCL devices ===========================================================================

CASES = [  # (op, dtype, shape, kwargs)
    ("sum", "float32", (1, 128), {}),
    ("sum", "float32", (1, 128), {"axis": -1}),
    ("mean", "float32", (6, 40), {"axis": 0}),                  # strided kernel
    ("max", "int32", (3, 4, 5), {"axis": (1, 2), "keepdims": True}),
    ("argmax", "float32", (5, 33), {"axis": 1}),
    ("var", "float32", (4, 50), {"axis": -1, "ddof": 1}),
    ("sum", "int32", (4, 50), {"axis": -1}),                    # int64 accumulation
    ("any", "float32", (4, 9), {"axis": 0}),
    ("min", "float16", (2, 70), {"axis": -1}),
    ("sum", "bool", (3, 20), {"axis": 1}),                      # count of nonzero bytes
    ("mean", "int32", (3, 20), {"axis": 1}),                    # host divide: never learned
    ("sum", "float32", (2, 3, 4), {"axis": (0, 2)}),            # non-adjacent: a copy, never learned
    ("logsumexp", "float32", (3, 300), {"axis": -1}),
    ("norm", "float32", (3, 30), {"axis": -1}),
]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _exact(shape, dtype="float32", seed=0):
    """Integer values (as ``dtype``): every sum of them is exact, so results compare with ==."""
    return np.random.default_rng(seed).integers(-100, 100, size=shape).astype(dtype)


def _no_slow_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the full path ran for a learned call")

    monkeypatch.setattr(api, "_reduce_slow", refuse)


@pytest.mark.parametrize("kind", ["numpy", "pyopencl"])
def test_learned_calls_answer_as_the_full_path(cl_device, cl_queue, kind, monkeypatch):
    learned = []
    for i, (op, dtype, shape, kwargs) in enumerate(CASES):
        x = _data(shape, dtype, seed=i)
        a = x if kind == "numpy" else cla.to_device(cl_queue, x)
        where = {"device": cl_device} if kind == "numpy" else {}
        f = getattr(clreduce, op)
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(a, **kwargs, **where)
        before = fastpath.size()
        first = f(a, **kwargs, **where)     # full path, learns
        second = f(a, **kwargs, **where)    # fast path where learned
        _same(first, slow)
        _same(second, slow)
        if fastpath.size() > before:
            learned.append((op, a, kwargs, where, slow))
    names = [op for op, *_ in learned]
    assert {"sum", "mean", "max", "argmax", "var", "any", "min", "logsumexp", "norm"} <= set(names)
    # integer mean (a divide on the host) and non-adjacent axes (a copy) stay on the full path
    assert len(learned) == len(CASES) - 2
    with monkeypatch.context() as m:
        _no_slow_path(m)
        for op, a, kwargs, where, slow in learned:
            _same(getattr(clreduce, op)(a, **kwargs, **where), slow)


def test_changes_between_calls_and_out_reuse(cl_device, cl_queue):
    shapes = [(3, 64), (5, 64), (3, 65), (3, 64)]
    out = np.empty(3, np.float64)
    for rnd in range(3):
        for j, shape in enumerate(shapes):
            for dtype in ("float32", "int32"):
                x = _exact(shape, dtype, seed=10 * rnd + j)
                d = cla.to_device(cl_queue, x)
                for axis in (-1, 0, None):
                    np.testing.assert_array_equal(clreduce.sum(x, axis=axis, device=cl_device), x.sum(axis=axis))
                    np.testing.assert_array_equal(clreduce.max(d, axis=axis).get(), x.max(axis=axis))
                if shape[0] == 3:
                    got = clreduce.mean(x, axis=1, out=out, device=cl_device)
                    assert got is out
                    want = np.mean(x, axis=1, out=np.empty(3, np.float64))  # numpy loops in out's float64
                    # exact sums, one divide; without fp64 (rusticl) a float32 input loops in
                    # float32 and is cast into out= (README, dtype rules): one float32 rounding
                    fp64 = bool(cl_device.double_fp_config) or dtype == "int32"
                    np.testing.assert_allclose(out, want, rtol=1e-12 if fp64 else 2.0**-23)
                    dout = cla.empty(cl_queue, 3, np.int32 if dtype == "int32" else np.float32)
                    assert clreduce.max(d, axis=1, out=dout) is dout
                    np.testing.assert_array_equal(dout.get(), x.max(axis=1))


def test_errors_stay_errors_after_a_similar_call_was_learned(cl_device, cl_queue):
    x = _data((4, 6), "float32")
    d = cla.to_device(cl_queue, x)
    for a, where in ((x, {"device": cl_device}), (d, {})):
        for _ in range(2):  # the second round runs with every good call learned
            clreduce.sum(a, axis=1, **where)
            clreduce.sum(a, axis=1, keepdims=True, **where)
            clreduce.sum(a, axis=1, out=np.empty(4, np.float32), **where)
            with pytest.raises(TypeError):
                clreduce.sum(a, axis=True, **where)
            with pytest.raises(TypeError):
                clreduce.sum(a, axis=1, keepdims=1.0, **where)
            with pytest.raises(AxisError):
                clreduce.sum(a, axis=2, **where)
            with pytest.raises(ValueError):
                clreduce.sum(a, axis=1, out=np.empty(5, np.float32), **where)
            with pytest.raises(TypeError):
                clreduce.sum(a, axis=1, dtype=np.complex64, **where)  # unsupported dtype=
            with pytest.raises(TypeError):
                clreduce.sum(a, axis=1, foo=1, **where)
            with pytest.raises(ValueError):
                clreduce.var(a, axis=1, ddof=1, correction=1, **where)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                clreduce.var(a, axis=1, ddof=6, **where)  # warns on every call, never learned
            assert any("Degrees of freedom" in str(w.message) for w in caught)
    context = cl.Context([cl_device])  # kept: the Intel runtime invalidates a collected context
    other = cl.CommandQueue(context)
    for _ in range(2):
        with pytest.raises(ValueError):
            clreduce.sum(d, axis=1, queue=other)  # a queue of another context than the array


def test_freed_arrays_whose_memory_comes_back(cl_device, cl_queue):
    for i in range(12):
        x = _exact((8, 256), seed=i)
        d = cla.to_device(cl_queue, x)
        np.testing.assert_array_equal(clreduce.sum(d, axis=1).get(), x.sum(axis=1))
        np.testing.assert_array_equal(clreduce.sum(x, axis=1, device=cl_device), x.sum(axis=1))
        del d, x  # the allocator hands the same memory to the next array


def test_another_queue_or_context_with_the_same_shape(cl_device):
    x = _exact((4, 100))
    seen = set()
    for _ in range(3):
        context = cl.Context([cl_device])
        for queue in (cl.CommandQueue(context), cl.CommandQueue(context)):
            d = cla.to_device(queue, x)
            got = clreduce.sum(d, axis=1)
            assert got.queue is queue and got.context == context
            np.testing.assert_array_equal(got.get(), x.sum(axis=1))
            np.testing.assert_array_equal(clreduce.sum(x, axis=1, queue=queue), x.sum(axis=1))
            seen.add(context.int_ptr)
        del d, context, queue
    assert seen


@pytest.mark.parametrize("own_kernels", [16, 3], ids=["own-kernels", "past-the-limit"])
def test_threads_hammer_one_learned_signature(cl_device, cl_queue, own_kernels, monkeypatch):
    """Many threads, one learned signature per input kind, one shared queue: each thread's
    own data must come back, whether a thread has its own kernel objects or (past the
    per-launcher limit) shares the locked ones with the full path."""
    from clreduce.backends import cl_launch

    monkeypatch.setattr(cl_launch, "_MAX_THREADS", own_kernels)
    clreduce.max(cla.to_device(cl_queue, _data((16, 512), "int32")), axis=1)  # learn before the race
    clreduce.sum(_exact((16, 512)), axis=1, queue=cl_queue)

    def work(i):
        for j in range(60):
            x = _data((16, 512), "int32", seed=100 * i + j)
            np.testing.assert_array_equal(clreduce.max(cla.to_device(cl_queue, x), axis=1).get(), x.max(axis=1))
            y = _exact((16, 512), seed=100 * i + j)
            np.testing.assert_array_equal(clreduce.sum(y, axis=1, queue=cl_queue), y.sum(axis=1))

    errors = hammer(work, 8, fast_switch=True)
    assert not errors, errors[0]


def test_whatever_drops_plans_drops_launchers(cl_device, cl_queue, cl_caps):
    from clreduce.backends import opencl

    x = _data((4, 64), "float32")
    clreduce.sum(x, axis=1, device=cl_device)
    clreduce.sum(x, axis=0, device=cl_device)
    assert fastpath.size() == 2 and opencl.cache_sizes()["fast_path"] == 2
    opencl.clear_caches()
    assert fastpath.size() == 0
    clreduce.sum(x, axis=1, device=cl_device)
    plan_mode = next(iter(opencl._plan_cache.items()))[1][0].sg_mode
    opencl._drop_plans_using(None, plan_mode)  # what marking a sub-group mode bad does
    assert fastpath.size() == 0
    if cl_caps.implementation == "rusticl":
        # as in test_runtime_caches: rusticl's context reference counts hide a dropped
        # context from the cache; memory stays bounded by the LRU
        pytest.skip("rusticl's context reference counts (the parts above passed)")
    # a user context dropped by its owner: its plans and launchers go together
    context = cl.Context([cl_device])
    clreduce.sum(cla.to_device(cl.CommandQueue(context), x), axis=1)
    assert fastpath.size() == 1
    del context
    import gc

    gc.collect()
    opencl.release_unused_contexts()
    assert fastpath.size() == 0


# ==== CUDA GPU (the lead's machine; skipped here) ===============================================

def _cuda_unavailable() -> str | None:
    from clreduce.backends import get_backend

    return get_backend("cuda").unavailable_reason()


CUDA_REASON = _cuda_unavailable()
CUDA_CASES = [("sum", "float32", (1, 128), {}), ("mean", "float32", (64, 1000), {"axis": -1}),
              ("mean", "float16", (64, 1000), {"axis": -1}), ("max", "float16", (8, 70), {"axis": 0}),
              ("argmax", "float32", (5, 33), {"axis": 1}), ("var", "float32", (4, 50), {"axis": -1, "ddof": 1}),
              ("sum", "int32", (4, 50), {"axis": -1}), ("sum", "float32", (2, 3, 4), {"axis": 1, "keepdims": True}),
              ("sum", "float32", (2, 1 << 20), {"axis": -1}),  # split over blocks: a partials buffer
              ("argmax", "float16", (1 << 21,), {})]


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"CUDA backend unavailable: {CUDA_REASON}")
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_cuda_learned_calls_answer_as_the_full_path(kind, monkeypatch):
    import cupy

    if kind == "torch":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("torch without CUDA")
    for i, (op, dtype, shape, kwargs) in enumerate(CUDA_CASES):
        host = _data(shape, dtype, seed=i)
        a = cupy.asarray(host) if kind == "cupy" else torch.from_numpy(host).cuda()
        f = getattr(clreduce, op)
        with monkeypatch.context() as m:
            m.setenv("CLREDUCE_FAST_PATH", "0")
            slow = f(a, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a launcher that disagrees warns
            f(a, **kwargs)  # learns, after checking the launcher against the full path
        with monkeypatch.context() as m:
            _no_slow_path(m)
            fast = f(a, **kwargs)
        assert type(fast) is type(slow)
        _same(fast, slow)
        if kind == "torch":
            assert fast.device == a.device


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_cuda_torch_learned_call_follows_the_current_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = (torch.arange(4 * 4096, device="cuda") % 7).to(torch.float32).reshape(4, 4096)  # exact sums
    want = x.sum(-1)
    clreduce.sum(x, axis=-1)
    clreduce.sum(x, axis=-1)  # learned
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = x * 1  # written on the side stream
        got = clreduce.sum(y, axis=-1)  # must run after it, on the same stream
    side.synchronize()
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_cuda_cupy_learned_call_follows_the_current_stream():
    import cupy

    x = (cupy.arange(4 * 4096) % 7).astype(cupy.float32).reshape(4, 4096)  # exact sums
    want = cupy.asnumpy(x).sum(-1)
    clreduce.sum(x, axis=-1)
    clreduce.sum(x, axis=-1)  # learned
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        y = x * 1  # written on the side stream
        got = clreduce.sum(y, axis=-1)  # must run after it, on the same stream
    side.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"CUDA backend unavailable: {CUDA_REASON}")
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_cuda_threads_hammer_one_learned_signature(kind):
    """Fresh threads (each with its own parameter block, and a context made current on its
    first call) and the main thread run one learned launcher on arrays of their own."""
    import cupy

    if kind == "torch":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("torch without CUDA")
        to_device = lambda h: torch.from_numpy(h).cuda()  # noqa: E731
        to_host = lambda r: r.cpu().numpy()  # noqa: E731
    else:
        to_device, to_host = cupy.asarray, cupy.asnumpy
    hosts = [_exact((16, 300), seed=s) for s in range(8)]
    arrays = [to_device(h) for h in hosts]
    clreduce.sum(arrays[0], axis=-1)
    clreduce.sum(arrays[0], axis=-1)  # learned

    def work(i):
        for r in range(40):
            j = (i + r) % len(arrays)
            np.testing.assert_array_equal(to_host(clreduce.sum(arrays[j], axis=-1)), hosts[j].sum(-1))

    errors = hammer(work, 6, with_main=True)
    assert not errors, errors[0]


def test_transposed_numpy_input_is_not_learned_and_stays_right(cl_device):
    # cl_host.base_order reads x.T in place on the full path; the fast launchers wrap C-order
    # memory only, so such a call must stay on the full path (it raised "not contiguous")
    x = _data((6, 40), "float32").T
    for op in ("sum", "argmax", "max"):
        want = getattr(np, op)(x, axis=0)
        for _ in range(3):
            got = getattr(clreduce, op)(x, axis=0, device=cl_device)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---- the buffer pool (backends/cl_pool.py) -------------------------------------------------
# NVIDIA's clReleaseMemObject waits for the GPU when the buffer's kernel has not finished, so
# learned device-array calls on GPUs take their output and partials buffers from a pool. A
# pooled buffer must never be written while a caller still holds it or a command still uses it.

def _pool_modes(cl_queue):
    """The device's own mode (large on CPU devices, reuse on GPUs), and reuse forced."""
    from clreduce.backends import cl_pool

    own = cl_pool.mode_for(cl_queue.context, cl_queue)
    return [own] + (["reuse"] if own != "reuse" else [])


@pytest.fixture
def pool_modes():
    """Iterate over _pool_modes with each one in force and the caches fresh."""
    from clreduce.backends import cl_pool, opencl

    def each(cl_queue):
        for mode in _pool_modes(cl_queue):
            opencl.clear_caches()
            cl_pool.mode_override = mode
            yield mode

    yield each
    cl_pool.mode_override = None
    opencl.clear_caches()


@pytest.mark.parametrize("threads", [1, 3])
def test_pooled_results_of_back_to_back_calls_on_two_queues_stay_right(cl_device, cl_queue, pool_modes, threads):
    from clreduce.backends import cl_pool

    queues = [cl.CommandQueue(cl_queue.context), cl.CommandQueue(cl_queue.context)]
    inputs = [_exact((16, 300), seed=s) for s in range(6)]
    long_rows = [_exact((2, 1 << 14), seed=s) for s in range(3)]
    for mode in pool_modes(cl_queue):
        errors, before = [], cl_pool.stats()

        def work(t):
            try:
                dev = [[cla.to_device(q, x) for x in inputs] for q in queues]
                dev_long = [[cla.to_device(q, x) for x in long_rows] for q in queues]
                kept = []  # (result or a view of it, what numpy says)
                for i in range(48):
                    q = (i + t) % 2
                    r = clreduce.sum(dev[q][i % 6], axis=1)
                    s = clreduce.max(dev_long[q][i % 3], axis=1, force=Force(split=4))  # partials
                    if i % 3 == 0:
                        kept.append((r, inputs[i % 6].sum(axis=1)))
                    if i % 4 == 1:
                        kept.append((r[3:9], inputs[i % 6].sum(axis=1)[3:9]))  # a view holds the buffer
                    if i % 5 == 2:
                        kept.append((s, long_rows[i % 3].max(axis=1)))
                    # the rest are dropped at once: their buffers may serve the next calls
                for got, want in kept:
                    # to_numpy waits for the read's own event: Array.get() on rusticl 22.3 can
                    # return before the data landed when another thread flushed the queue
                    # (cl_transfer), which CI once caught here as a wrong value
                    np.testing.assert_array_equal(to_numpy(got), want)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=300)
        assert not errors, f"{mode}: {errors[0]!r}"
        after = cl_pool.stats()
        assert after["slots"] <= cl_pool.MAX_SLOTS and after["bytes"] <= cl_pool.MAX_BYTES
        if mode == "reuse":
            assert after["reused"] > before["reused"]


def test_pool_never_rewrites_a_buffer_a_pending_command_or_an_alias_still_reads(cl_device, cl_queue, pool_modes):
    """The caller keeps a second handle to a result's buffer, or reads it on another queue
    (held back by a user event), then drops the result; later calls must not write it. The
    pending read is checked where the pool can see it: drivers that count pending commands
    as references (cl_pool's module doc says why the others cannot be)."""
    from clreduce.backends import cl_pool

    ctx = cl_queue.context
    other = cl.CommandQueue(ctx)
    counts = cl_pool.counts_pending(ctx, cl_queue)
    x = _exact((16, 300), seed=1)
    y = _exact((16, 300), seed=2)  # later calls write other values
    for mode in pool_modes(cl_queue):
        dx, dy = cla.to_device(cl_queue, x), cla.to_device(cl_queue, y)
        clreduce.sum(dx, axis=1)
        clreduce.sum(dx, axis=1)  # learned
        read = gate = None
        if mode != "reuse" or counts:  # "large": these 64-byte results are plain buffers
            r = clreduce.sum(dx, axis=1)
            gate = cl.UserEvent(ctx)
            copy = cla.empty(other, 16, np.float32)
            read = cl.enqueue_copy(other, copy.base_data, r.base_data, byte_count=r.nbytes,
                                   wait_for=[r.events[-1], gate])
            del r
        a = clreduce.sum(dx, axis=1)
        alias = cl.Buffer.from_int_ptr(a.base_data.int_ptr, retain=True)
        del a
        for _ in range(20):
            clreduce.sum(dy, axis=1)
        cl_queue.finish()
        if read is not None:
            gate.set_status(cl.command_execution_status.COMPLETE)
            read.wait()
            np.testing.assert_array_equal(copy.get(), x.sum(axis=1), err_msg=mode)
        host = np.empty(16, np.float32)
        cl.enqueue_copy(cl_queue, host, alias)
        np.testing.assert_array_equal(host, x.sum(axis=1), err_msg=mode)
        alias.release()
        if mode == "reuse":
            assert cl_pool.stats()["reused"] > 0  # the dropped results did serve later calls


def test_results_dropped_before_their_kernels_run_are_reused(cl_device, cl_queue):
    """The host ahead of the device: back-to-back calls on an in-order queue, each result
    dropped while its kernel still waits, take one pooled buffer again and again. PoCL counts a
    reference for every pending command, and the pool kept each such result out: 200 softmax
    calls on 32 MB device arrays took 6.4 GB there. The queue is held back by a user event so
    every kernel is still pending while the next call takes its buffer."""
    from clreduce.backends import cl_pool, opencl

    opencl.clear_caches()
    x = _exact((16384, 128), seed=3)  # 8 MB results: pooled on CPU devices ("large") too
    dx = cla.to_device(cl_queue, x)
    for _ in range(2):
        clreduce.cumsum(dx, axis=1)  # learned: the calls below enqueue and return
    cl_queue.finish()
    before = cl_pool.stats()
    gate = cl.UserEvent(cl_queue.context)
    cl.enqueue_barrier(cl_queue, wait_for=[gate])
    try:
        for _ in range(6):
            clreduce.cumsum(dx, axis=1)  # dropped at once
        kept = clreduce.cumsum(dx, axis=1)
        during = cl_pool.stats()
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
    cl_queue.finish()
    np.testing.assert_array_equal(to_numpy(kept), np.cumsum(x, axis=1))
    assert during["reused"] - before["reused"] >= 6, (before, during)
    assert during["slots"] - before["slots"] <= 1, (before, during)
    opencl.clear_caches()


def test_pool_is_bounded_and_cleared(cl_device, cl_queue, monkeypatch):
    from clreduce.backends import cl_pool, opencl

    opencl.clear_caches()
    monkeypatch.setattr(cl_pool, "MAX_SLOTS", 3)
    monkeypatch.setattr(cl_pool, "mode_override", "reuse")
    xs = [_exact((8, 200), seed=s) for s in range(10)]
    kept = [clreduce.sum(cla.to_device(cl_queue, x), axis=1) for x in xs]  # held: the pool lends, then stops
    assert cl_pool.stats()["slots"] <= 3
    assert opencl.cache_sizes()["pooled_buffers"] == cl_pool.stats()["slots"]
    for r, x in zip(kept, xs):
        np.testing.assert_array_equal(r.get(), x.sum(axis=1))
    opencl.clear_caches()
    assert cl_pool.stats()["slots"] == 0 and cl_pool.stats()["lent"] == 0
    for r, x in zip(kept, xs):  # results outlive the pool
        np.testing.assert_array_equal(r.get(), x.sum(axis=1))


def test_cl_pool_env_turns_the_pool_off(cl_device, cl_queue, monkeypatch):
    # CLREDUCE_CL_POOL=0 is the way out for code that reads results on several queues on a
    # driver that does not count pending commands (NVIDIA): no buffer is ever lent or reused
    from clreduce.backends import cl_pool, opencl

    opencl.clear_caches()
    # this CPU device stands in for a GPU: its learned mode is set to the GPUs' one
    monkeypatch.setitem(cl_pool._modes, cl_queue.device.int_ptr, "reuse")
    assert cl_pool.mode_for(cl_queue.context, cl_queue) == "reuse"
    monkeypatch.setenv("CLREDUCE_CL_POOL", "0")
    assert cl_pool.mode_for(cl_queue.context, cl_queue) == "off"
    x = _exact((8, 200), seed=1)
    for _ in range(4):
        got = clreduce.sum(cla.to_device(cl_queue, x), axis=1)
        np.testing.assert_array_equal(got.get(), x.sum(axis=1))
    assert cl_pool.stats()["slots"] == 0 and cl_pool.stats()["lent"] == 0
    opencl.clear_caches()


def test_pooled_buffers_do_not_keep_a_dropped_context(cl_device, monkeypatch):
    import gc

    from clreduce.backends import cl_pool, opencl

    opencl.clear_caches()
    monkeypatch.setattr(cl_pool, "mode_override", "reuse")
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    x = _exact((8, 200))
    d = cla.to_device(queue, x)
    for _ in range(4):
        r = clreduce.sum(d, axis=1)
    np.testing.assert_array_equal(r.get(), x.sum(axis=1))
    assert cl_pool.stats()["slots"] >= 1
    del r, d, queue, ctx
    gc.collect()
    released = opencl.release_unused_contexts()
    assert released >= 1  # the pool's buffers did not hold it
    assert cl_pool.stats()["free"] == 0 and cl_pool.stats()["slots"] == 0
