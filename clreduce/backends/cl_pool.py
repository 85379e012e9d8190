"""Device buffers kept between calls, because releasing one can stall the host.

Why: NVIDIA's OpenCL driver (580.x, H100) makes ``clReleaseMemObject`` of a buffer whose
kernel has not finished wait for the device -- 94 us behind a 1 GiB kernel, against 3.6 us
for an idle buffer. Back-to-back calls that drop each result (``r = clreduce.mean(x)`` in a
loop) and a split-K plan's partials, released inside every call, therefore serialised the
host and the GPU: 16777216x16 float32 took 556 us a call against 398 with results kept.
A fresh large buffer is not free either (its first use costs the host ~70 us there).

So the fast path (``cl_launch``) takes its output and partials buffers from here:

* **partials** are ours alone: given back right after the enqueue with the last pass's
  event, and used again by a call on the same in-order queue at once (the queue orders the
  commands) or on another queue once that event has completed.
* **outputs** go to the caller inside the result array. The pool keeps a reference to each
  one it lent and takes it back only when no Python object but the pool holds it
  (``sys.getrefcount``: the result array, every view of it and any ``base_data`` the caller
  kept are gone) **and** the driver reports a single reference to it. How it is then
  reused depends on the driver, learned once per device (``mode_for``):

  - ``reuse``: the driver counts a reference for every command still pending on the buffer
    (PoCL does; a copy and a kernel gated on a user event show it -- Mesa's rusticl counts
    the copy only, so it is not trusted). Then "one reference" proves
    that no command on *any* queue still reads or writes it, and the buffer serves the next
    call of its size in the context.
  - ``defer``: a GPU whose driver does not (so a command the caller enqueued on another
    queue, then dropped the result, cannot be seen). The buffer is never reused: it is
    released once our own command on it has completed -- the driver defers the deletion
    until every other command is done, as always -- so the release does not wait for the
    kernel that wrote it.
  - ``off``: CPU devices, whose release does not wait (Intel's CPU runtime, PoCL): output
    and partials are plain buffers, as before, and cost nothing extra per call (the tests
    force the other modes there).

Bounded: at most ``MAX_SLOTS`` buffers and ``MAX_BYTES`` bytes are tracked (lent, free or
waiting for release); past that the pool first waits for its oldest buffer's command and
otherwise hands out a plain buffer. ``opencl.clear_caches()`` calls ``clear()``; a
context's free buffers go in ``opencl.release_unused_contexts``. Thread-safe: a slot moves
between the lists only by atomic ``deque`` operations, so two threads never hold one; the
counters change under a lock, on the allocation path only.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections import deque

import pyopencl as cl

MAX_SLOTS = 64
MAX_BYTES = 512 << 20
MAX_ONE = MAX_BYTES // 4  # a bigger buffer is never tracked (its kernel dwarfs any release)
RECLAIM_PER_CALL = 2  # lent buffers looked at per call (a result held longer is seen later)

_RW = cl.mem_flags.READ_WRITE
_COMPLETE = cl.command_execution_status.COMPLETE
_OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


class _Slot:
    """One buffer and what the pool knows about its last use."""

    __slots__ = ("buffer", "nbytes", "key", "queue", "event", "gen", "defer")

    def __init__(self, buffer, nbytes: int, key, gen: int):
        self.buffer = buffer
        self.nbytes = nbytes
        self.key = key  # (context handle, nbytes, kind); None: not tracked (a plain buffer)
        self.queue = 0  # handle of the queue of the last command that used it
        self.event = None  # that command's event
        self.gen = gen
        self.defer = False  # an output in defer mode: released, never reused


def _python_refs(slot: _Slot) -> int:
    return sys.getrefcount(slot.buffer)


def _baseline() -> int:
    # what _python_refs reads when the slot is the buffer's only owner, measured through the
    # same code (interpreters differ in the temporaries they count)
    probe = _Slot(object(), 0, None, 0)
    return _python_refs(probe)


_ONLY_OURS = _baseline()

# reusable buffers by (context handle, nbytes, "partials" | "output"): the two kinds never
# mix, their reuse rules differ
_free: dict[tuple[int, int, str], deque] = {}
_lent: deque = deque()  # outputs in callers' hands
_graves: deque = deque()  # defer mode: outputs nobody holds, released once their event completes
_lock = threading.Lock()
_state = {"slots": 0, "bytes": 0, "gen": 0, "reused": 0, "released": 0}
_modes: dict[int, str] = {}  # device handle -> "reuse" | "defer" | "off"
mode_override: str | None = None  # tests and tools/bench_nvidia_opencl.py compare the modes


def _done(event) -> bool:
    return event is None or event.command_execution_status == _COMPLETE


def _same_in_order_queue(slot: _Slot, queue) -> bool:
    return slot.queue == queue.int_ptr and not (queue.properties & _OUT_OF_ORDER)


def mode_for(ctx: cl.Context, queue) -> str:
    """How this device's buffers are pooled (see the module doc), learned once per device
    (``cl_launch`` asks once per launcher): ``off`` on CPU devices, whose release never
    waits (Intel's runtime, PoCL: the pool's bookkeeping would only add to a call), else
    ``reuse`` where the driver counts pending commands as references, ``defer`` where not."""
    if mode_override is not None:
        return mode_override
    device = queue.device
    mode = _modes.get(device.int_ptr)
    if mode is None:
        if device.type & cl.device_type.CPU:
            mode = "off"
        else:
            mode = "reuse" if counts_pending(ctx, queue) else "defer"
        _modes[device.int_ptr] = mode
    return mode


_PROBE_SOURCE = "__kernel void touch(__global int *a) { a[get_global_id(0)] += 1; }"


def counts_pending(ctx: cl.Context, queue) -> bool:
    """Whether the driver counts a reference to a buffer for every command still pending on
    it -- a kernel argument as well as a copy (Mesa's rusticl counts copies, not kernels)."""
    # commands held back by a user event are certainly pending while we look at the counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)  # Intel's compiler always logs
        kernel = cl.Program(ctx, _PROBE_SOURCE).build().touch
    gate = cl.UserEvent(ctx)
    src, dst, arg = (cl.Buffer(ctx, _RW, 64) for _ in range(3))
    kernel.set_arg(0, arg)
    events = []
    try:
        before = (src.reference_count, arg.reference_count)
        events.append(cl.enqueue_copy(queue, dst, src, byte_count=64, wait_for=[gate]))
        events.append(cl.enqueue_nd_range_kernel(queue, kernel, (16,), None, wait_for=[gate]))
        counted = src.reference_count > before[0] and arg.reference_count > before[1]
    finally:
        gate.set_status(_COMPLETE)
    for event in events:
        event.wait()
    return counted


def _track(ctx: cl.Context, nbytes: int, kind: str):
    """A new tracked slot, or None when the bound is reached."""
    if nbytes > MAX_ONE:
        return None
    with _lock:
        if _state["slots"] >= MAX_SLOTS or _state["bytes"] + nbytes > MAX_BYTES:
            return None
        _state["slots"] += 1
        _state["bytes"] += nbytes
        gen = _state["gen"]
    try:
        buffer = cl.Buffer(ctx, _RW, nbytes)
    except BaseException:
        _forget(nbytes, gen)
        raise
    return _Slot(buffer, nbytes, (ctx.int_ptr, nbytes, kind), gen)


def _forget(nbytes: int, gen: int) -> None:
    with _lock:
        if gen == _state["gen"]:
            _state["slots"] -= 1
            _state["bytes"] -= nbytes


def _plain(ctx: cl.Context, nbytes: int) -> _Slot:
    return _Slot(cl.Buffer(ctx, _RW, nbytes), nbytes, None, -1)


def _bury(slot: _Slot) -> None:
    """Release a tracked buffer nobody uses (its own command done) and stop counting it."""
    slot.buffer.release()
    _forget(slot.nbytes, slot.gen)
    _state["released"] += 1


def _reclaim(count: int = RECLAIM_PER_CALL) -> None:
    """Move up to ``count`` lent outputs whose callers let go to the free list (reuse) or
    the graves (defer); release finished graves."""
    for _ in range(count):
        try:
            slot = _lent.popleft()  # atomic: this thread alone holds the slot now
        except IndexError:
            break
        if slot.gen != _state["gen"]:
            continue  # cleared meanwhile
        if _python_refs(slot) > _ONLY_OURS or slot.buffer.reference_count != 1:
            _lent.append(slot)  # still held (an array, a view, an alias handle)
        elif slot.defer:
            _graves.append(slot)
        else:
            _free.setdefault(slot.key, deque()).append(slot)
    for _ in range(count):
        try:
            slot = _graves.popleft()
        except IndexError:
            break
        if slot.gen != _state["gen"]:
            continue
        if _done(slot.event):
            _bury(slot)
        else:
            _graves.appendleft(slot)
            break


def _reusable(slot: _Slot, queue, partials: bool) -> bool:
    if slot.gen != _state["gen"]:
        return False
    if partials:  # only our passes use it: the queue or the event orders them
        return _same_in_order_queue(slot, queue) or _done(slot.event)
    # an output in reuse mode: one driver reference means no command is pending on it
    return slot.buffer.reference_count == 1


def take(ctx: cl.Context, queue, nbytes: int, partials: bool = True) -> _Slot:
    """A slot holding a buffer of ``nbytes`` for a call on ``queue`` (partials, or an
    output in reuse mode): one nobody uses any more, else a new one (tracked while the
    bound allows)."""
    _reclaim()
    kind = "partials" if partials else "output"
    key = (ctx.int_ptr, nbytes, kind)
    free = _free.get(key)
    if free:
        try:
            slot = free.popleft()
        except IndexError:
            slot = None
        if slot is not None:
            if _reusable(slot, queue, partials):
                _state["reused"] += 1
                return slot
            free.appendleft(slot)
    slot = _track(ctx, nbytes, kind)
    if slot is not None:
        return slot
    # at the bound: wait for the oldest buffer of this size (the host is far ahead of the
    # device when it gets here) before handing out a plain buffer
    if free:
        try:
            slot = free.popleft()
        except IndexError:
            slot = None
        if slot is not None:
            if slot.event is not None:
                slot.event.wait()
            if _reusable(slot, queue, partials):
                _state["reused"] += 1
                return slot
            free.append(slot)
    return _plain(ctx, nbytes)


def discard(slot: _Slot) -> None:
    """A slot whose call failed before its buffer was used: stop counting it."""
    if slot.key is not None:
        _forget(slot.nbytes, slot.gen)


def give_back(slot: _Slot, queue, event) -> None:
    """A partials buffer whose last command is ``event`` on ``queue``: free again."""
    if slot.key is None or slot.gen != _state["gen"]:
        return
    slot.queue, slot.event = queue.int_ptr, event
    _free.setdefault(slot.key, deque()).append(slot)


def output(ctx: cl.Context, queue, nbytes: int, mode: str) -> _Slot:
    """A slot whose buffer becomes a result handed to the caller (then ``lend`` it);
    ``mode`` is ``mode_for``'s answer for this device."""
    if mode == "reuse":
        return take(ctx, queue, nbytes, partials=False)
    if mode == "defer":
        _reclaim()
        slot = _track(ctx, nbytes, "output")
        if slot is None:  # at the bound: release the oldest grave once its command is done
            try:
                grave = _graves.popleft()
            except IndexError:
                grave = None
            if grave is not None and grave.gen == _state["gen"]:
                if grave.event is not None:
                    grave.event.wait()
                _bury(grave)
                slot = _track(ctx, nbytes, "output")
        if slot is not None:
            slot.defer = True
            return slot
    return _plain(ctx, nbytes)


def lend(slot: _Slot, queue, event) -> None:
    """``slot``'s buffer now belongs to a result written by ``event``; the pool watches it."""
    if slot.key is None or slot.gen != _state["gen"]:
        return
    slot.queue, slot.event = queue.int_ptr, event
    _lent.append(slot)


def drop_context(ctx_ptr: int) -> None:
    """Release the free buffers of a context (``opencl.release_unused_contexts``)."""
    _reclaim(len(_lent))
    for slot in [g for g in list(_graves) if g.key[0] == ctx_ptr]:
        try:
            _graves.remove(slot)
        except ValueError:
            continue  # another thread took it
        if slot.gen == _state["gen"]:
            if slot.event is not None:
                slot.event.wait()
            _bury(slot)
    for key in [k for k in list(_free) if k[0] == ctx_ptr]:
        free = _free.pop(key, None)
        while free:
            slot = free.popleft()
            if slot.gen == _state["gen"]:
                if slot.event is not None:
                    slot.event.wait()
                _bury(slot)


def clear() -> None:
    """Forget every buffer: free ones are released (after their commands), lent ones stay
    with their owners as plain buffers."""
    with _lock:
        _state["gen"] += 1
        _state["slots"] = _state["bytes"] = 0
        free = [s for q in _free.values() for s in q]
        _free.clear()
        graves = list(_graves)
        _graves.clear()
        _lent.clear()
    for slot in free + graves:
        if slot.event is not None:
            slot.event.wait()
        slot.buffer.release()
    _modes.clear()


def stats() -> dict:
    """Counts for tests and benchmarks: tracked slots and bytes, free, lent, graves, reuses."""
    return {"slots": _state["slots"], "bytes": _state["bytes"], "free": sum(len(q) for q in list(_free.values())),
            "lent": len(_lent), "graves": len(_graves), "reused": _state["reused"], "released": _state["released"]}
