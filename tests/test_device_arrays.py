"""Device-resident arrays, program reuse, dtype=/out= semantics, and devices without fp64."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import clreduce
from clreduce.backends import cl_transfer, opencl
from clreduce.plan import UnsupportedOnDevice

from conftest import pyopencl_view

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")


@pytest.fixture
def counters(monkeypatch):
    """Count host<->device copies, kernel launches and program builds while a test runs."""
    counts = {"copies": 0, "launches": 0, "builds": 0}
    real_copy, real_launch, real_program = cl.enqueue_copy, cl.enqueue_nd_range_kernel, cl.Program

    def copy(*args, **kwargs):
        counts["copies"] += 1
        return real_copy(*args, **kwargs)

    def launch(*args, **kwargs):
        counts["launches"] += 1
        return real_launch(*args, **kwargs)

    def program(*args, **kwargs):
        counts["builds"] += 1
        return real_program(*args, **kwargs)

    monkeypatch.setattr(cl, "enqueue_copy", copy)
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", launch)
    monkeypatch.setattr(cl, "Program", program)
    return counts


CALLS = [  # (op, kwargs, view): each reduces a (64, 33, 20) float32 device array
    ("sum", dict(axis=-1), None),                 # rows kernel, in place
    ("mean", dict(axis=1), None),                 # strided kernel (inner = 20), in place
    ("var", dict(axis=(0, 2)), None),             # non-adjacent axes: device gather copy
    ("argmax", dict(axis=None), None),            # flat index over everything
    ("max", dict(axis=1), (slice(None), slice(None, None, 3))),  # non-contiguous view
]


@pytest.mark.parametrize("op,kwargs,view", CALLS, ids=[c[0] for c in CALLS])
def test_pyopencl_array_round_trip_moves_no_data(cl_device, counters, op, kwargs, view):
    queue = opencl.queue_for(cl_device)
    x = np.random.default_rng(3).random((64, 33, 20), dtype=np.float32)
    xd = cla.to_device(queue, x)
    src = xd if view is None else xd[view]
    getattr(clreduce, op)(src, **kwargs)  # warm-up: probe and build happen here
    queue.finish()
    counters.update(copies=0, launches=0, builds=0)
    got = getattr(clreduce, op)(src, **kwargs)
    queue.finish()
    assert isinstance(got, cla.Array) and got.queue is not None
    assert counters["copies"] == 0, "a device-resident reduction must not transfer data"
    assert counters["builds"] == 0, "a repeated call must reuse the compiled program"
    assert counters["launches"] >= 1
    want = getattr(np, op)(x if view is None else x[view], **kwargs)
    np.testing.assert_allclose(got.get(), want, rtol=2e-5)


def test_out_wrong_shape_fails_before_any_device_work(cl_device, counters):
    x = np.ones((8, 5), np.float32)
    with pytest.raises(ValueError, match="shape"):
        clreduce.sum(x, axis=1, out=np.empty(5, np.float32), device=cl_device)
    with pytest.raises(ValueError):  # an out= numpy refuses (argmax into float; numpy 2 casts float sums into int)
        clreduce.argmax(x, axis=1, out=np.empty(8, np.float64), device=cl_device)
    with pytest.raises(TypeError):
        clreduce.argmax(x, axis=1, out=np.empty(8, np.float64), device=cl_device)  # ... as numpy's TypeError
    assert counters["launches"] == 0


def test_out_is_written_and_returned(cl_device):
    x = np.arange(40, dtype=np.float32).reshape(8, 5)
    out = np.zeros(8, np.float64)  # float32 -> float64 is same_kind
    assert clreduce.sum(x, axis=1, out=out, device=cl_device) is out
    np.testing.assert_array_equal(out, x.sum(axis=1))
    queue = opencl.queue_for(cl_device)
    out_d = cla.zeros(queue, 8, np.float32)
    assert clreduce.max(cla.to_device(queue, x), axis=1, out=out_d) is out_d
    np.testing.assert_array_equal(out_d.get(), x.max(axis=1))


@pytest.mark.parametrize("op", ["sum", "max", "argmin"])
def test_full_reduction_of_numpy_input_into_a_0d_pyopencl_out(cl_device, op):
    """A 0-d result copied into a 0-d pyopencl out= stays 0-d (np.ascontiguousarray had made it
    shape (1,), and pyopencl's set raised RuntimeError: an outside fuzz run, 2026-11-29)."""
    queue = opencl.queue_for(cl_device)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1]
    want = getattr(np, op)(x)
    out = cla.zeros(queue, (), want.dtype)
    assert getattr(clreduce, op)(x, out=out) is out
    assert out.shape == () and out.get() == want
    out0 = cla.zeros(queue, (), np.float64)
    assert clreduce.sum(np.array(2.5, np.float32), axis=0, out=out0) is out0 and out0.get() == 2.5


@pytest.mark.parametrize("x,op,dtype", [
    (np.full(300, 100, np.int8), "sum", np.int8),        # int8 accumulation wraps as numpy's does
    (np.arange(1000, dtype=np.int32), "mean", np.float32),
    (np.arange(1000, dtype=np.int32), "mean", None),      # integer mean -> float64
    (np.linspace(0, 1, 999, dtype=np.float32), "sum", np.float64),
    (np.arange(12, dtype=np.int16).reshape(3, 4), "prod", np.int64),
])
def test_dtype_argument_follows_numpy(cl_device, x, op, dtype):
    got = getattr(clreduce, op)(x, dtype=dtype, device=cl_device)
    want = getattr(np, op)(x, dtype=dtype)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.fixture
def no_fp64(monkeypatch, cl_device):
    """The device as a phone GPU sees it: no cl_khr_fp64."""
    from clreduce.backends import opencl_probe

    real = opencl_probe.probe_device
    caps = dataclasses.replace(real(cl_device), fp64=False)
    monkeypatch.setattr(opencl, "probe_device", lambda device, **kw: caps)
    opencl.clear_caches()
    yield caps
    opencl.clear_caches()


def test_float64_without_fp64_is_refused_with_the_way_out(cl_device, no_fp64):
    x = np.linspace(0, 1, 1000)
    with pytest.raises(UnsupportedOnDevice, match="fp64") as info:
        clreduce.sum(x, device=cl_device)
    assert no_fp64.name in str(info.value) and "float32" in str(info.value)


def test_float64_opt_in_to_float32_without_fp64(cl_device, no_fp64):
    x = np.linspace(0, 1, 1000)
    got = clreduce.mean(x, dtype=np.float32, device=cl_device)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.mean(x, dtype=np.float32), rtol=1e-6)


def test_integer_mean_without_fp64_is_exact(cl_device, no_fp64):
    x = np.arange(1, 10**6, dtype=np.int64) * 3
    got = clreduce.mean(x, device=cl_device)
    assert got.dtype == np.float64 and got == np.mean(x)


# full reductions of pyopencl arrays that end on the host (bool and integer means, nanmean,
# empty inputs): the result went back to the device through np.ascontiguousarray, which made
# the 0-d result shape (1,)
HOST_ENDED = [
    ("mean", np.arange(6) % 2 == 0), ("var", np.arange(6) % 2 == 0), ("mean", np.arange(6)),
    ("nanmean", np.arange(6.0, dtype=np.float32)), ("sum", np.zeros(0, np.float32)),
    ("count_nonzero", np.zeros(0, np.float32)),
]


@pytest.mark.parametrize("op,x", HOST_ENDED, ids=[f"{op}-{x.dtype}-{x.size}" for op, x in HOST_ENDED])
def test_pyopencl_full_reductions_are_0d(cl_device, op, x):
    q = opencl.queue_for(cl_device)
    import pyopencl.array as cla

    got = getattr(clreduce, op)(cla.to_device(q, x))
    want = getattr(np, op)(x)
    assert got.shape == () and got.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got.get(), want)


def test_pyopencl_integer_mean_is_numpy_exactly(cl_device):
    """float64(exact sum) / K with a true divide, not a multiply by 1 / K (6 / 17 was an ulp off)."""
    q = opencl.queue_for(cl_device)
    import pyopencl.array as cla

    x = np.zeros((17, 40), np.int16)
    x[:6] = 1
    x[:, 1:] = np.arange(17 * 39).reshape(17, 39) * 7 - 2000
    np.testing.assert_array_equal(clreduce.mean(cla.to_device(q, x), axis=0).get(), np.mean(x, axis=0))


def test_pyopencl_integers_without_fp64(cl_device):
    """On a device without fp64 (rusticl here), pyopencl's own float64 kernels cannot build:
    bool / integer means and variances of pyopencl arrays cast on the host instead, and an
    integer norm (numpy works in float64) is refused by name, not with a build failure."""
    q = opencl.queue_for(cl_device)
    if q.device.double_fp_config:
        pytest.skip("the device has fp64")
    import pyopencl.array as cla

    x = np.arange(1000, dtype=np.int32) % 17
    for op in ("mean", "var", "std"):
        got = getattr(clreduce, op)(cla.to_device(q, x))
        assert got.dtype == np.float64
        np.testing.assert_allclose(got.get(), getattr(np, op)(x), rtol=1e-6)  # float32 moments (README)
    assert clreduce.mean(cla.to_device(q, x % 2 == 0)).get() == np.mean(x % 2 == 0)
    with pytest.raises(UnsupportedOnDevice, match="astype"):
        clreduce.norm(cla.to_device(q, x))


# ---- transposed and strided pyopencl arrays -----------------------------------------------------
# pyopencl's elementwise operators (``!=``, ``astype``) walk a Fortran-ordered buffer in memory
# order and label the result with C strides, and refuse other strided views: every elementwise
# step the API takes on the caller's array must see a C-order copy (api._c_order). Each case
# below took such a step on the caller's array itself.

LAYOUT_CALLS = [  # (op, kwargs, dtype): each one's elementwise step before the kernel
    ("argmin", dict(axis=1), "bool"),            # canonical bytes: x.view(uint8) != 0
    ("argmax", dict(axis=1), "bool"),
    ("argmax", dict(axis=None), "bool"),
    ("norm", dict(axis=1), "int32"),             # numpy.linalg.norm's float64 cast of integers
    ("norm", dict(axis=0, ord=1), "int16"),
    ("sum", dict(axis=1, dtype=np.float16), "float32"),  # numpy rounds each element to float16
    ("cumsum", dict(axis=None), "int32"),        # a flattened scan: reshape(-1)
    ("logcumsumexp", dict(axis=None), "float32"),
]


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("op,kwargs,dtype", LAYOUT_CALLS, ids=[f"{c[0]}-{c[2]}-{c[1]}" for c in LAYOUT_CALLS])
def test_transposed_and_strided_pyopencl_inputs_match_numpy(cl_device, op, kwargs, dtype, layout):
    q = opencl.queue_for(cl_device)
    if (dtype == "float64" or op == "norm") and not q.device.double_fp_config:
        pytest.skip("integer norm works in float64, which the device lacks")
    rng = np.random.default_rng(11)
    shape = (5, 7)  # rows and columns differ: a transpose read in memory order is visible
    if dtype == "bool":
        x = rng.random(shape) < 0.5
        x[:, -1] = ~x[:, 0]  # no row all-equal: argmax / argmin differ by layout
    elif dtype.startswith("int"):
        x = rng.integers(-90, 90, shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
    device = pyopencl_view(q, x, layout)
    before = cl_transfer.to_host(device)
    if op == "logcumsumexp":
        got, want = clreduce.logcumsumexp(device, **kwargs), np.logaddexp.accumulate(x.ravel().astype(np.float64))
    elif op == "norm":
        got, want = clreduce.norm(device, **kwargs), np.linalg.norm(x, **kwargs)
    else:
        got, want = getattr(clreduce, op)(device, **kwargs), getattr(np, op)(x, **kwargs)
    host = got.get() if hasattr(got, "get") else np.asarray(got)
    assert host.shape == np.shape(want)
    if op in ("argmin", "argmax", "cumsum"):
        np.testing.assert_array_equal(host, want)
    else:
        np.testing.assert_allclose(host, want, rtol=2e-6 if dtype != "float32" or op == "sum" else 1e-5,
                                   atol=1e-6)
    np.testing.assert_array_equal(cl_transfer.to_host(device), before)  # the caller's array is untouched


def test_strided_pyopencl_weight_is_read_in_place_order(cl_device):
    """A step-2 slice of a pyopencl weight: ``get`` refuses it; it is gathered first."""
    q = opencl.queue_for(cl_device)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 9)).astype(np.float32)
    w = rng.standard_normal(18).astype(np.float32)
    got = clreduce.rms_norm(cla.to_device(q, x), weight=cla.to_device(q, w)[::2]).get()
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w[::2]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


KIND_OPS = ["sum", "mean", "prod", "max", "min", "any", "all", "count_nonzero", "nansum", "nanmean", "var",
            "std", "argmax", "argmin", "logsumexp", "norm", "norm-ord0", "norm-ordinf"]


@pytest.mark.parametrize("dtype", ["float16", "bool", "int32", "float32"])
@pytest.mark.parametrize("op", KIND_OPS)
def test_pyopencl_input_gives_pyopencl_result(cl_device, op, dtype):
    """pyopencl in, pyopencl out, whichever path the result took: a cast pyopencl cannot run
    (float16, bool) goes through the host and comes back (norm(ord=0) of float16 once
    returned a numpy array)."""
    q = opencl.queue_for(cl_device)
    x = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    name, _, ord_ = op.partition("-ord")
    kwargs = {"ord": {"0": 0, "inf": np.inf}[ord_]} if ord_ else {}
    try:
        got = getattr(clreduce, name)(cla.to_device(q, x), axis=1, **kwargs)
    except UnsupportedOnDevice:
        pytest.skip(f"{op} of {dtype} is refused on this device")
    except TypeError as exc:
        assert dtype == "bool" and op in ("var", "std"), exc  # numpy refuses these too
        return
    assert isinstance(got, cla.Array), type(got)
    with np.errstate(all="ignore"):
        if name == "logsumexp":  # its dtype rule is scipy's; only the kind of result is checked
            want = np.log(np.exp(x.astype(np.float64)).sum(axis=1)).astype(got.dtype)
        else:
            want = np.linalg.norm(x, axis=1, **kwargs) if name == "norm" else getattr(np, name)(x, axis=1)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64), rtol=1e-3)


# ---- arrays on other queues ----------------------------------------------------------------------
def test_inputs_pending_on_another_queue_are_waited_for(cl_device):
    """A pyopencl input whose producing kernel is still pending on another queue, reduced or
    row-op'd with ``queue=`` (full path, then the fast path): the call waits for the array's
    events, as pyopencl's own operations do. It had read the input before it was written (an
    outside thread fuzz run, 2026-11-29: most calls wrong on pip's PoCL, Intel's runtime and
    rusticl)."""
    ctx = opencl.queue_for(cl_device).context
    q1, q2 = cl.CommandQueue(ctx), cl.CommandQueue(ctx)
    x = np.random.default_rng(7).standard_normal((512, 2048)).astype(np.float32)
    y = 2 * x.astype(np.float64) + 1
    e = np.exp(y - y.max(-1, keepdims=True))
    for _ in range(3):  # the first call learns its signature, the next ones take the fast path
        a = cla.to_device(q1, x)
        q1.finish()
        b = a * 2 + 1  # pending on q1: b.events holds its kernel
        np.testing.assert_allclose(clreduce.sum(b, axis=-1, queue=q2).get(), y.sum(-1), rtol=1e-5, atol=1e-2)
        np.testing.assert_allclose(clreduce.softmax(b, queue=q2).get(), e / e.sum(-1, keepdims=True),
                                   rtol=1e-4, atol=1e-7)


def test_outs_on_another_queue_get_the_results(cl_device):
    """``out=`` made on another queue of the context: a reduction's copy into it, a row op's
    rows and a 0-d statistic land there, ordered behind the kernels. The reductions' copy had
    run on out's queue without waiting (out kept its old contents: most calls on rusticl, a
    third on Intel's runtime), row ops raised pyopencl's queue AssertionError, and a 0-d
    pyopencl statistic an IndexError (the same fuzz run)."""
    ctx = opencl.queue_for(cl_device).context
    q1, q2 = cl.CommandQueue(ctx), cl.CommandQueue(ctx)
    x = np.random.default_rng(8).standard_normal((512, 2048)).astype(np.float32)
    xd = x.astype(np.float64)
    for _ in range(3):
        a = cla.to_device(q1, x)
        q1.finish()
        out = cla.zeros(q2, (512,), np.float32)
        q2.finish()
        assert clreduce.sum(a, axis=-1, out=out) is out
        np.testing.assert_allclose(out.get(), xd.sum(-1), rtol=1e-5, atol=1e-2)
        rows = cla.zeros(q2, x.shape, np.float32)
        clreduce.cumsum(a, axis=-1, out=rows)
        np.testing.assert_allclose(rows.get()[:, -1], xd.sum(-1), rtol=1e-4, atol=1e-2)
        v = cla.to_device(q1, x[0])
        pair = (cla.zeros(q2, (2048,), np.float32), cla.zeros(q2, (), np.float32))
        clreduce.absmax_scale(v, out=pair)
        assert pair[1].get() == np.abs(x[0]).max()
        np.testing.assert_allclose(pair[0].get(), x[0] / np.abs(x[0]).max(), rtol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "moments"])
def test_row_op_out_in_another_context_is_a_value_error(cl_device, op):
    """As the reductions' out=: the row ops' copy had raised pyopencl's LogicError
    (INVALID_CONTEXT; an outside fuzz run, 2026-11-29)."""
    import pyopencl as cl

    device = opencl.queue_for(cl_device).device
    here, there = cl.Context([device]), cl.Context([device])
    q_here, q_there = cl.CommandQueue(here), cl.CommandQueue(there)
    x = cla.to_device(q_here, np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32))
    out = (cla.empty(q_there, (4,), np.float32), None) if op == "moments" else cla.empty(q_there, (4, 16), np.float32)
    for _ in range(2):  # and once the call is learned
        with pytest.raises(ValueError, match="another OpenCL context"):
            getattr(clreduce, op)(x, out=out)
