"""Device buffers kept between calls, because releasing one can stall the host.

Why: NVIDIA's OpenCL driver (580.x, H100) makes ``clReleaseMemObject`` of a buffer whose
kernel has not finished wait for the device -- 94 us behind a 1 GiB kernel, against 3.6 us
for an idle buffer. Back-to-back calls that drop each result (``r = clreduce.mean(x)`` in a
loop) and a split-K plan's partials, released inside every call, therefore serialised the
host and the GPU: 16777216x16 float32 took 556 us a call against 398 with results kept.
Releasing only once the kernel is done does not cure it (a fresh large buffer costs the
host ~70 us on its first use there; the public call reached 0.48-0.68 of CUDA's that way,
against 0.72-1.0 with reuse: README, NVIDIA OpenCL).

So on GPUs the fast path (``cl_launch``) takes its output and partials buffers from here,
and a buffer is written again only when all of these hold:

* **no Python object but the pool holds it** (``sys.getrefcount``): the result array, every
  view of it and any ``base_data`` the caller kept are gone. Partials never leave the pool.
* **the driver reports one reference to it**: no second handle (``Buffer.from_int_ptr``)
  exists. Where the driver also counts a reference for every command still pending on a
  buffer (PoCL; ``counts_pending`` checks a copy and a kernel held back by a user event),
  this proves that no command on *any* queue still uses it. There, one reference more than
  our own commands on it still pending are the pool's and theirs (read in that order: the
  count first, then the commands' status, so a command done in between is not counted as
  ours), and no other command uses it either.
  Without that, PoCL kept every result of back-to-back calls whose kernels had not run yet
  out of the pool: 200 float32 softmax calls on 32 MB device arrays, the results dropped and
  no ``finish`` between them, took 6.4 GB of memory and 35 ms a call, against 3.8 ms with
  one ``finish`` a call (pip's PoCL, 2-core AMD host; benchmarks/pool_pending_cpu_2026-11-29).
* **our last command on it is done** (its event is complete), or was enqueued on the same
  in-order queue as the new call (that queue runs them in order).

What the pool cannot see on a driver that does not count pending commands (NVIDIA's, Intel's
CPU runtime, Mesa's rusticl): a command the caller enqueued on *another* queue, still
pending, after which the caller dropped the result. That is the rule of every pooling
allocator (pyopencl's ``MemoryPool``, CuPy's, PyTorch's ``record_stream``): wait for such a
read (its event, or ``queue.finish()``) before dropping the last reference.

Mode per device (``mode_for``): ``reuse`` on GPUs; ``large`` on CPU devices, whose release
never waits (Intel's CPU runtime, PoCL), but whose fresh buffer faults in its pages on first
use: results of ``LARGE_MIN_BYTES`` and more come from the pool, smaller ones are plain
buffers (``pooled``). On this project's 2-core AMD host, 64 MB float32 pyopencl arrays, a
learned call with plain result buffers against pooled ones: softmax 55 -> 28 ms (Intel) and
103 -> 76 ms (PoCL), rms_norm 42 -> 23 / 53 -> 29, cumsum 51 -> 29 / 58 -> 28. Small results
stay plain: the pool's bookkeeping adds 2-5 us to a call of a few microseconds, and on PoCL
(which counts pending commands) back-to-back calls of 256 KB filled the pool with buffers
their kernels still held and then waited for them (softmax 64x1024: 313 -> 402 us). The tests
force ``reuse`` there too.

Bounded: at most ``MAX_SLOTS`` buffers and ``MAX_BYTES`` bytes are tracked (lent or free);
at the bound a call first waits for the oldest free buffer of its size (the host is then
far ahead of the device), else gets a plain buffer. ``opencl.clear_caches()`` calls
``clear()``; a context's free buffers go in ``opencl.release_unused_contexts``.
Thread-safe: a slot moves between the lists only by atomic ``deque`` operations, so two
threads never hold one; the counters change under a lock, on the allocation path only.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections import deque

import pyopencl as cl

from .. import config

MAX_SLOTS = 64
MAX_BYTES = 512 << 20
MAX_ONE = MAX_BYTES // 4  # a bigger buffer is never tracked (its kernel dwarfs any release)
LARGE_MIN_BYTES = 4 << 20  # "large" mode (CPU devices): pooled from here (1024 pages to fault in)
RECLAIM_PER_CALL = 2  # lent buffers looked at per call (a result held longer is seen later)

_RW = cl.mem_flags.READ_WRITE
_COMPLETE = cl.command_execution_status.COMPLETE
_OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


class _Slot:
    """One buffer and what the pool knows about its last use."""

    __slots__ = ("buffer", "nbytes", "key", "queue", "event", "gen", "counting", "pending")

    def __init__(self, buffer, nbytes: int, key, gen: int):
        self.buffer = buffer
        self.nbytes = nbytes
        self.key = key  # (context handle, nbytes, kind); None: not tracked (a plain buffer)
        self.queue = 0  # handle of the queue of our last command on it
        self.event = None  # that command's event
        self.gen = gen
        self.counting = False  # its driver counts a reference for every pending command
        self.pending = ()  # there: events of our calls' last commands on it, not yet seen done


def _python_refs(slot: _Slot) -> int:
    return sys.getrefcount(slot.buffer)


def _baseline() -> int:
    # what _python_refs reads when the slot is the buffer's only owner, measured through the
    # same code (interpreters differ in the temporaries they count)
    probe = _Slot(object(), 0, None, 0)
    return _python_refs(probe)


_ONLY_OURS = _baseline()

# free buffers by (context handle, nbytes, "partials" | "output"): the kinds never mix
_free: dict[tuple[int, int, str], deque] = {}
_lent: deque = deque()  # outputs in callers' hands
_lock = threading.Lock()
_state = {"slots": 0, "bytes": 0, "gen": 0, "reused": 0}
_modes: dict[int, str] = {}  # device handle -> "reuse" | "off"
_counting: dict[int, bool] = {}  # device handle -> counts_pending's answer
mode_override: str | None = None  # tests and tools/bench_nvidia_opencl.py force a mode


def mode_for(ctx: cl.Context, queue) -> str:
    """``reuse`` on GPUs, ``large`` on CPU devices, ``off`` everywhere while
    ``CLREDUCE_CL_POOL=0`` (see the module doc); ``cl_launch`` asks once per launcher (the
    variable is part of the fast path's key, so a change learns a new launcher)."""
    if mode_override is not None:
        return mode_override
    if not config.cl_pool():
        return "off"
    device = queue.device
    mode = _modes.get(device.int_ptr)
    if mode is None:
        mode = _modes[device.int_ptr] = "large" if device.type & cl.device_type.CPU else "reuse"
    return mode


def pooled(mode: str, nbytes: int) -> bool:
    """Whether a call whose results take ``nbytes`` takes them (and its scratch) from the
    pool in ``mode`` (see the module doc)."""
    return mode == "reuse" or (mode == "large" and nbytes >= LARGE_MIN_BYTES)


_PROBE_SOURCE = "__kernel void touch(__global int *a) { a[get_global_id(0)] += 1; }"


def counts_pending(ctx: cl.Context, queue) -> bool:
    """Whether the driver counts a reference to a buffer for every command still pending on
    it -- a kernel argument as well as a copy (Mesa's rusticl counts copies, not kernels)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)  # Intel's compiler always logs
        kernel = cl.Program(ctx, _PROBE_SOURCE).build().touch
    # commands held back by a user event are certainly pending while we look at the counts
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


def _counts_pending_on(queue) -> bool:
    """counts_pending for ``queue``'s device, probed once per device and process."""
    device = queue.device.int_ptr
    counted = _counting.get(device)
    if counted is None:
        try:
            counted = counts_pending(queue.context, queue)
        except cl.Error:  # a driver that cannot run the probe: count its buffers as before
            counted = False
        _counting[device] = counted
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


def _reclaim(count: int = RECLAIM_PER_CALL) -> None:
    """Move up to ``count`` lent outputs that only the pool holds to the free lists."""
    for _ in range(count):
        try:
            slot = _lent.popleft()  # atomic: this thread alone holds the slot now
        except IndexError:
            break
        if slot.gen != _state["gen"]:
            continue  # cleared meanwhile
        if _python_refs(slot) > _ONLY_OURS or not _driver_refs_ours(slot):
            _lent.append(slot)  # still held (an array, a view, a second handle, a command)
        else:
            _free.setdefault(slot.key, deque()).append(slot)


def _driver_refs_ours(slot: _Slot) -> bool:
    """Whether the driver's references to the buffer are the pool's, and on a driver that
    counts pending commands perhaps those of our own commands still pending (module doc).
    The count is read before the statuses: each of ours still pending after the count was
    read was counted in it, so a count of one more than those leaves room for no other."""
    refs = slot.buffer.reference_count
    if refs == 1:
        return True
    return slot.counting and refs == 1 + len(_still_pending(slot.pending))


def _still_pending(events) -> tuple:
    return tuple(e for e in events if e.command_execution_status != _COMPLETE)


def _reusable(slot: _Slot, queue) -> bool:
    if slot.gen != _state["gen"]:
        return False
    if slot.queue == queue.int_ptr and not (queue.properties & _OUT_OF_ORDER):
        return True
    return slot.event is None or slot.event.command_execution_status == _COMPLETE


def take(ctx: cl.Context, queue, nbytes: int, kind: str = "partials") -> _Slot:
    """A slot holding a buffer of ``nbytes`` for a call on ``queue``: a free one that may be
    written again (see the module doc), else a new one (tracked while the bound allows)."""
    _reclaim()
    key = (ctx.int_ptr, nbytes, kind)
    free = _free.get(key)
    if free:
        try:
            slot = free.popleft()  # the oldest: the likeliest to be done
        except IndexError:
            slot = None
        if slot is not None:
            if _reusable(slot, queue):
                _state["reused"] += 1
                return slot
            free.appendleft(slot)
    slot = _track(ctx, nbytes, kind)
    if slot is not None:
        return slot
    if free:  # at the bound: wait for the oldest buffer of this size
        try:
            slot = free.popleft()
        except IndexError:
            slot = None
        if slot is not None:
            if slot.event is not None:
                slot.event.wait()
            if _reusable(slot, queue):
                _state["reused"] += 1
                return slot
            free.append(slot)
    return _Slot(cl.Buffer(ctx, _RW, nbytes), nbytes, None, -1)


def output(ctx: cl.Context, queue, nbytes: int) -> _Slot:
    """A slot whose buffer becomes a result handed to the caller (then ``lend`` it)."""
    return take(ctx, queue, nbytes, "output")


def discard(slot: _Slot) -> None:
    """A slot whose call failed before its buffer was used: stop counting it."""
    if slot.key is not None:
        _forget(slot.nbytes, slot.gen)


def give_back(slot: _Slot, queue, event) -> None:
    """A partials buffer whose last command is ``event`` on ``queue``: free again (partials
    never leave the pool, so the driver's count of them is never read)."""
    if slot.key is None or slot.gen != _state["gen"]:
        return
    slot.queue, slot.event = queue.int_ptr, event
    _free.setdefault(slot.key, deque()).append(slot)


def lend(slot: _Slot, queue, event, commands=None) -> None:
    """``slot``'s buffer now belongs to a result written by ``event``; the pool watches it.
    ``commands``: the events of every command of the call that takes the buffer (default:
    ``event`` alone; a command of it left out only keeps the buffer out of the pool longer)."""
    if slot.key is None or slot.gen != _state["gen"]:
        return
    _note_command(slot, queue, event, commands)
    _lent.append(slot)


def _note_command(slot: _Slot, queue, event, commands) -> None:
    """A lent result's last command, and on a driver that counts pending commands the events
    of ours on it still pending (_driver_refs_ours)."""
    slot.queue, slot.event = queue.int_ptr, event
    slot.counting = _counts_pending_on(queue)
    if slot.counting:  # a buffer reused on an in-order queue before its last call ran
        slot.pending = _still_pending(slot.pending) + tuple(commands or (event,))


def _release(slot: _Slot) -> None:
    if slot.event is not None:
        slot.event.wait()  # NVIDIA would wait inside the release anyway
    slot.buffer.release()


def drop_context(ctx_ptr: int) -> None:
    """Release the free buffers of a context (``opencl.release_unused_contexts``)."""
    _reclaim(len(_lent))
    for key in [k for k in list(_free) if k[0] == ctx_ptr]:
        free = _free.pop(key, None)
        while free:
            slot = free.popleft()
            if slot.gen == _state["gen"]:
                _release(slot)
                _forget(slot.nbytes, slot.gen)


def clear() -> None:
    """Forget every buffer: free ones are released, lent ones stay with their owners as
    plain buffers."""
    with _lock:
        _state["gen"] += 1
        _state["slots"] = _state["bytes"] = 0
        free = [s for q in _free.values() for s in q]
        _free.clear()
        _lent.clear()
    for slot in free:
        _release(slot)
    _modes.clear()
    _counting.clear()


def stats() -> dict:
    """Counts for tests and benchmarks: tracked slots and bytes, free, lent, reuses so far."""
    return {"slots": _state["slots"], "bytes": _state["bytes"], "free": sum(len(q) for q in list(_free.values())),
            "lent": len(_lent), "reused": _state["reused"]}
