"""Zero-copy numpy inputs on devices that share host memory (every CPU device here).

The caller's array is wrapped with CL_MEM_USE_HOST_PTR (from its page start, see
backends/cl_host.py), never written, and released before the call returns; peak memory stays
at the input's size instead of doubling.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_host  # noqa: E402

_PEAK = r"""
import resource, sys, numpy as np, clreduce
device = sys.argv[1]
clreduce.mean(np.ones((64, 4096), np.float32), axis=-1, device=device)  # probe and build first
x = np.random.default_rng(0).random((65536, 1024), dtype=np.float32)    # 256 MB
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
got = clreduce.mean(x, axis=-1, device=device)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert np.allclose(got, x.mean(axis=-1), rtol=1e-4)
print((after - before) * 1024, x.nbytes)
"""


def test_peak_memory_is_the_input_plus_five_percent(cl_device, cl_caps):
    if sys.platform != "linux":
        pytest.skip("ru_maxrss is in KiB on Linux only")
    out = subprocess.run([sys.executable, "-c", _PEAK, cl_caps.platform_name], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    growth, input_bytes = map(int, out.stdout.split())
    # the input is already resident before the call; the call may add at most 5 % of it
    assert growth <= 0.05 * input_bytes, f"peak grew by {growth / 2**20:.1f} MB over a {input_bytes / 2**20:.0f} MB input"


class _Recorder:
    """Counts wrapped input buffers and explicit releases of them (by the full path's
    PreparedReduction and by the fast path's launchers alike)."""

    def __init__(self, monkeypatch):
        self.wrapped, self.released, self._buffers = [], 0, []
        real_input, real_release = cl_host.input_buffer, cl.Buffer.release

        def input_buffer(ctx, device, src):
            buf, offset, wrapped = real_input(ctx, device, src)
            assert wrapped == bool(buf.flags & cl.mem_flags.USE_HOST_PTR)
            self.wrapped.append(wrapped)
            if wrapped:
                self._buffers.append(buf)
            return buf, offset, wrapped

        def release(buf):
            if any(buf is b for b in self._buffers):  # released, not just forgotten
                self.released += 1
            real_release(buf)

        monkeypatch.setattr(cl_host, "input_buffer", input_buffer)
        monkeypatch.setattr(cl.Buffer, "release", release)


def test_inputs_are_wrapped_unchanged_and_released(cl_device, monkeypatch):
    rec = _Recorder(monkeypatch)
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, size=(300, 257), dtype=np.int64)
    keep = x.copy()
    readonly = x.copy()
    readonly.flags.writeable = False
    cases = [x, x[7:], readonly, x[:, ::3], x.T]  # offset view, read-only, strided, transposed
    for a in cases:
        for axis in (-1, 0, None):
            np.testing.assert_array_equal(clreduce.sum(a, axis=axis, device=cl_device), a.sum(axis=axis))
            np.testing.assert_array_equal(clreduce.argmax(a, axis=axis, device=cl_device), a.argmax(axis=axis))
    np.testing.assert_array_equal(x, keep)
    assert rec.wrapped and all(rec.wrapped), "a CPU device shares host memory: every input is wrapped"
    assert rec.released == sum(rec.wrapped), "every wrapped buffer is released before the call returns"


def test_row_ops_read_numpy_inputs_in_place_and_release_them(cl_device, monkeypatch):
    # row ops took a copy of every numpy input (pyopencl to_device) until they used cl_host too
    rec = _Recorder(monkeypatch)
    x = np.random.default_rng(5).standard_normal((64, 1000)).astype(np.float32)  # 256 KB: wrapped
    keep = x.copy()
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(clreduce.softmax(x, device=cl_device), e / e.sum(axis=-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(clreduce.cumsum(x, axis=-1, device=cl_device), np.cumsum(x, axis=-1),
                               rtol=1e-4, atol=1e-4)
    rms = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(clreduce.rms_norm(x, device=cl_device), rms, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, keep)
    # each first call wraps twice: the full path, then the row fast path's check run of its launcher
    assert len(rec.wrapped) == 6 and all(rec.wrapped), "a CPU device shares host memory: row-op inputs are wrapped"
    assert rec.released == 6, "every wrapped buffer is released before the call returns"
    np.testing.assert_array_equal(clreduce.rms_norm(x, device=cl_device), clreduce.rms_norm(x, device=cl_device))
    assert rec.wrapped == [True] * 8 and rec.released == 8, "learned calls wrap and release as well"


def test_misaligned_input_is_copied_and_still_right(cl_device, monkeypatch):
    rec = _Recorder(monkeypatch)
    raw = np.arange(4 * 7 * 1430 + 1, dtype=np.uint8)
    # a float32 view starting one byte into the buffer: not element-aligned, cannot be wrapped
    x = np.frombuffer(raw.tobytes(), dtype=np.uint8)[1:].view(np.float32).reshape(7, 1430)
    assert x.ctypes.data % 4 != 0
    np.testing.assert_allclose(clreduce.sum(x, axis=-1, device=cl_device), x.sum(axis=-1), rtol=1e-5)
    assert rec.wrapped[-1] is False


def test_devices_without_shared_memory_keep_the_copy(cl_device, monkeypatch):
    rec = _Recorder(monkeypatch)
    monkeypatch.setattr(cl_host, "shares_host_memory", lambda device: False)  # NVIDIA's OpenCL
    x = np.arange(65536, dtype=np.float32).reshape(64, 1024)
    np.testing.assert_array_equal(clreduce.max(x, axis=-1, device=cl_device), x.max(axis=-1))
    assert rec.wrapped == [False]


def test_zero_copy_can_be_turned_off(cl_device, monkeypatch):
    rec = _Recorder(monkeypatch)
    monkeypatch.setenv("CLREDUCE_ZERO_COPY", "0")
    x = np.arange(65536, dtype=np.int32).reshape(64, 1024)
    np.testing.assert_array_equal(clreduce.sum(x, axis=-1, device=cl_device), x.sum(axis=-1))
    assert rec.wrapped == [False]


def test_small_inputs_are_copied(cl_device, monkeypatch):
    rec = _Recorder(monkeypatch)
    x = np.arange(1024, dtype=np.float32).reshape(4, 256)  # 4 KB: a copy is cheaper than a wrap
    np.testing.assert_array_equal(clreduce.sum(x, axis=-1, device=cl_device), x.sum(axis=-1))
    assert rec.wrapped == [False]
