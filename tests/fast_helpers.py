"""Helpers of the fast-path tests (test_fastpath.py, test_fastpath_rows.py): results on the
host, bit-for-bit comparison, and one harness that runs a body in many threads at once."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from clreduce import fastpath
from clreduce.fastpath_rows import to_numpy


@pytest.fixture(autouse=True)
def fresh_fast_path():
    """Every test starts and ends with no learned call (import it into a test module)."""
    fastpath.clear()
    yield
    fastpath.clear()


def hammer(work, n: int, *, with_main: bool = False, fast_switch: bool = False, timeout: float = 300) -> list:
    """Call ``work(i)`` for i in range(n), each in its own thread, all released together
    (and ``work(99)`` in this thread too when ``with_main``: its first call, e.g. with a
    CUDA context already current). ``fast_switch`` makes the interpreter switch threads as
    often as it can, so races show up in seconds. Returns what the calls raised."""
    errors = []
    barrier = threading.Barrier(n + bool(with_main))

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    switch = sys.getswitchinterval()
    if fast_switch:
        sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        if with_main:
            body(99)
        for t in threads:
            t.join(timeout=timeout)
    finally:
        sys.setswitchinterval(switch)
    return errors


def host(r):
    """A result (numpy, pyopencl, cupy or torch) as a numpy array."""
    module = type(r).__module__.partition(".")[0]
    if module == "torch":
        return r.cpu().numpy()
    if module in ("cupy", "pyopencl"):
        # not r.get(): Mesa 22.3's rusticl can return from that blocking read before the data
        # landed when another thread flushed the queue (clreduce/backends/cl_transfer.py)
        return to_numpy(r)
    return r


def same(fast, slow):
    """Bit-for-bit equal, same kind, dtype and shape (NaN positions included; each of a pair)."""
    if isinstance(slow, tuple):
        assert isinstance(fast, tuple) and len(fast) == len(slow)
        for f, s in zip(fast, slow):
            same(f, s)
        return
    assert type(fast) is type(slow)
    f, s = np.asarray(host(fast)), np.asarray(host(slow))
    assert f.dtype == s.dtype and f.shape == s.shape
    np.testing.assert_array_equal(f, s)
