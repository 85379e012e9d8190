"""Copies between pyopencl arrays and numpy that wait for the copy itself, not the queue.

Why: Mesa's rusticl 22.3 (Debian 12's ``mesa-opencl-icd``, measured on llvmpipe) can return
from a *blocking* command before it ran. A blocking enqueue there queues the command, then
flushes the queue and waits for the last command *it* flushed. When another thread flushed
the same queue in between (its own blocking read, ``clFinish``, or ``clWaitForEvents`` on an
event of that queue, as ``cl_pool`` does at its bound), there is nothing left to flush, and
the call returns at once. A numpy array read that way is still being written:

* three threads sharing two queues read pooled results with ``Array.get()``; 1-3 rounds in
  100 on a loaded 2-core host came back with another call's values or with
  uninitialised memory, and matched numpy a few milliseconds later (the failure first seen
  in CI, in ``tests/test_fastpath.py``);
* the same flaw, single-threaded: ``queue.flush(); queue.finish()`` returns in 0.0 ms with
  the kernel still CL_QUEUED, 1.1 s before it completes (Intel's CPU runtime: the finish
  waits).

Newer rusticl waits for the last command flushed by anyone. The event a command returns is
always right, so the copies here enqueue without blocking and wait on that event (for a
copy into numpy, pyopencl's NannyEvent also keeps the host array alive until then). Against a
plain blocking read of 4 KB the difference was inside this 2-core VM's timing noise (10-16 us
on Intel's runtime); the per-call fast paths (``cl_launch``,
``cl_row_launch``) already wait on their copies' events.
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla


def to_host(a: cla.Array, queue=None) -> np.ndarray:
    """``a.get(queue)``, returned once the copy has completed (see the module doc). A strided
    view (neither C- nor Fortran-contiguous, which ``get`` refuses) is gathered into C order
    on the device first."""
    if not a.flags.f_contiguous:  # get reads a Fortran-ordered buffer as such
        from .opencl import c_order

        a = c_order(a, queue)
    host, event = a.get_async(queue=queue)
    event.wait()
    return host


def to_device(queue, host: np.ndarray) -> cla.Array:
    """``pyopencl.array.to_device``, returned once the copy has completed: ``host`` may be
    a temporary the caller drops at once (see the module doc)."""
    a = cla.to_device(queue, host, async_=True)
    a.finish()  # waits for its events (the copy) and forgets them
    return a

