"""Many threads, mixed ops/dtypes/devices and one shared user queue: every result against numpy.

Issue 7 measured wrong answers (an int32 max off by 1.1e9), INVALID_KERNEL_ARGS and
double-free crashes with 8-32 threads on the Intel runtime: one shared cl.Kernel per cache
entry had its arguments set by several threads at once. These tests fail on that code.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import clreduce
from clreduce.fastpath_rows import to_numpy

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")

THREADS = 16
CALLS_PER_THREAD = 12
# float32 sums in another order than numpy's pairwise sum: relative error ~ n * 2^-24 for
# the row lengths used here (< 5000); 1e-4 leaves margin, integers are exact.
RTOL = {"float32": 1e-4, "float64": 1e-10}

CASES = [  # (op, dtype, axis)
    ("sum", "float32", -1), ("sum", "int32", -1), ("max", "int32", -1), ("min", "float32", 0),
    ("mean", "float32", -1), ("var", "float32", -1), ("argmax", "float32", -1), ("argmin", "int32", 0),
    ("sum", "float64", 0), ("max", "float32", None), ("sum", "int32", None), ("std", "float64", -1),
]


def _devices(found_devices):
    return [d for d in found_devices if "oclgrind" not in d.caps.platform_name.lower()]


def _expected(op, x, axis):
    if op in ("argmax", "argmin"):
        return getattr(np, op)(x, axis=axis)
    return getattr(np, op)(x, axis=axis)


def _check(op, dtype, x, axis, got):
    want = _expected(op, x, axis)
    # to_numpy, not got.get(): threads share queues, and Mesa 22.3's rusticl can return from
    # a blocking read before the data landed (clreduce/backends/cl_transfer.py)
    got = to_numpy(got) if hasattr(got, "get") and not isinstance(got, np.ndarray) else got
    if dtype in RTOL and op not in ("argmax", "argmin"):
        # a sum's rounding error scales with sum|x|, not with the (possibly ~0) result
        scale = float(np.abs(x).sum(axis=axis).max()) if op == "sum" else 1.0
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)
    else:
        np.testing.assert_array_equal(got, want)


def _data(rng, dtype, shape):
    if dtype.startswith("int"):
        return rng.integers(-2**30, 2**30, size=shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


def _run_threads(work, n=THREADS):
    errors = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - collected and reported below
            errors.append((i, exc))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        i, exc = errors[0]
        raise AssertionError(f"{len(errors)} of {n} threads failed; thread {i}: {exc!r}") from exc


def test_threads_mixed_ops_devices_and_one_shared_queue(found_devices):
    devices = _devices(found_devices)
    if not devices:
        pytest.skip("no OpenCL device")
    # one user queue for every thread; the context is kept too: the Intel runtime invalidates
    # a context whose Python object is collected, even while a queue on it lives
    context = cl.Context([devices[0].device])
    shared = cl.CommandQueue(context)

    def work(i):
        rng = np.random.default_rng(1000 + i)
        for j in range(CALLS_PER_THREAD):
            op, dtype, axis = CASES[(i + j) % len(CASES)]
            found = devices[(i + j) % len(devices)]
            if dtype == "float64" and not found.caps.fp64:
                dtype = "float32"
            shape = (int(rng.integers(1, 40)), int(rng.integers(1, 3000)))
            x = _data(rng, dtype, shape)
            kind = (i + j) % 3
            if kind == 0:  # numpy on a named device
                got = getattr(clreduce, op)(x, axis=axis, device=found.device)
            elif kind == 1:  # numpy on the shared user queue
                got = getattr(clreduce, op)(x, axis=axis, queue=shared)
            else:  # a device array on the shared queue
                got = getattr(clreduce, op)(cla.to_device(shared, x), axis=axis)
            _check(op, dtype, x, axis, got)

    _run_threads(work)


def test_threads_hammer_one_kernel(found_devices):
    """Every thread runs the same plan (same cached kernel) with different buffers and
    scalars: the case where unlocked set_arg mixed one thread's input with another's."""
    devices = _devices(found_devices)
    if not devices:
        pytest.skip("no OpenCL device")
    device = devices[0].device

    def work(i):
        rng = np.random.default_rng(i)
        for _ in range(20):
            x = rng.integers(-2**30, 2**30, size=(16, 1024), dtype=np.int32)
            np.testing.assert_array_equal(clreduce.max(x, axis=-1, device=device), x.max(axis=-1))
            y = rng.standard_normal((16, 1024)).astype(np.float32)
            np.testing.assert_allclose(clreduce.var(y, axis=-1, ddof=i % 3, device=device),
                                       y.var(axis=-1, ddof=i % 3), rtol=RTOL["float32"])

    _run_threads(work)
