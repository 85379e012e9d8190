"""Results reach numpy only once their copy has run, even where a blocking read returns early.

Mesa 22.3's rusticl returns from a blocking ``clEnqueueReadBuffer`` before the copy ran when
another thread flushed the same queue in between (clreduce/backends/cl_transfer.py). CI
caught it once, as a wrong value in test_fastpath's threaded pool test. The race cannot be forced
through the driver, so ``early_blocking_reads`` emulates the flaw on every device: a
blocking copy into host memory returns at once and runs 30 ms later. Each read of a result
into numpy must wait on the copy's own event; one that trusts the blocking call hands back
``np.empty`` memory and fails here.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import clreduce
from clreduce.fastpath_rows import to_numpy

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")

_LATE_S = 0.03  # how long an "early" blocking copy waits behind its gate


@pytest.fixture
def early_blocking_reads(monkeypatch):
    """``pyopencl.enqueue_copy`` whose blocking copies into numpy return before they ran."""
    real = cl.enqueue_copy
    timers = []

    def early(queue, dest, src, **kwargs):
        if not (isinstance(dest, np.ndarray) and kwargs.get("is_blocking", True)):
            return real(queue, dest, src, **kwargs)
        gate = cl.UserEvent(queue.context)
        kwargs["wait_for"] = [*(kwargs.get("wait_for") or ()), gate]
        kwargs["is_blocking"] = False
        event = real(queue, dest, src, **kwargs)
        timer = threading.Timer(_LATE_S, gate.set_status, (cl.command_execution_status.COMPLETE,))
        timer.start()
        # held here too: pyopencl's NannyEvent waits for its copy when dropped, holding the
        # GIL, so a caller that drops it at once would stop the timer that opens the gate
        timers.append((timer, event))
        early.count += 1
        return event

    early.count = 0
    monkeypatch.setattr(cl, "enqueue_copy", early)
    yield early
    for timer, _ in timers:
        timer.join()


def _data(shape, seed=0):
    # integers: every sum is exact, so a result compares with ==
    return np.random.default_rng(seed).integers(-50, 50, size=shape).astype(np.float32)


def test_the_emulated_flaw_hands_back_unwritten_memory(cl_queue, early_blocking_reads):
    """The emulation bites: a plain blocking read through it returns before the copy."""
    x = np.arange(1, 4097, dtype=np.float32)
    d = cla.to_device(cl_queue, x)
    host = np.zeros_like(x)
    cl.enqueue_copy(cl_queue, host, d.base_data)  # blocking, as pyopencl's Array.get() asks
    seen_at_return = host.copy()
    threading.Event().wait(4 * _LATE_S)  # the gate opens in another thread (this one sleeps)
    cl_queue.finish()
    # the copy still ran: into the right memory, but after the call returned
    np.testing.assert_array_equal(host, x)
    assert not np.array_equal(seen_at_return, x)
    assert early_blocking_reads.count == 1


def test_numpy_results_wait_for_their_copy(cl_device, early_blocking_reads):
    # (16, 300) float32 sum: the full path on the first call, the fast path's launcher after it
    x = _data((16, 300), seed=1)
    for _ in range(3):
        np.testing.assert_array_equal(clreduce.sum(x, axis=1, device=cl_device), x.sum(axis=1))
    # max over the whole array: a 0-d result through the full path's read
    np.testing.assert_array_equal(clreduce.max(x, device=cl_device), x.max())
    # row ops (cl_row_launch): non-blocking copies, waited on as a group
    np.testing.assert_array_equal(clreduce.cumsum(x, axis=1, device=cl_device), np.cumsum(x, axis=1))


def test_device_results_read_into_numpy_wait_for_their_copy(cl_queue, early_blocking_reads):
    x = _data((16, 300), seed=2)
    d = cla.to_device(cl_queue, x)
    want = x.sum(axis=1)
    # to_numpy: what clreduce reads pyopencl arrays with (and what tests read results with)
    np.testing.assert_array_equal(to_numpy(clreduce.sum(d, axis=1)), want)
    # out= a numpy array with device input: write_out reads the device result
    out = np.empty(16, np.float32)
    assert clreduce.sum(d, axis=1, out=out) is out
    np.testing.assert_array_equal(out, want)
