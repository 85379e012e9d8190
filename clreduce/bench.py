"""Benchmark harness (``clreduce bench``): what a user gets, beside the strongest peers.

For each OpenCL device and each shape of the fixed list (DESIGN.md; rows scaled down so an
array holds about ``max_bytes``), reduced over the last axis, in one process:

* ``public``  wall time of the public call, numpy in -> numpy out (``clreduce.mean(x, -1)``);
* ``device``  wall time of the public call on a device-resident ``pyopencl.array.Array``,
  result left on the device (the call waits for the queue to finish);
* ``kernel``  OpenCL profiling-event time of the same plan (a diagnostic, not the headline);
* the peers of ``bench_peers`` (numpy, torch eager and ``torch.compile`` with every core,
  onnxruntime), numpy in -> numpy out;
* the device's buffer-copy bandwidth and the host's ``memcpy`` bandwidth.

GB/s is bytes read / time (copies count read + write). The event figures (``kernel`` and
the device copy) are reported as unavailable, with the reason, where the device's event
timer is unusable (``event_timer_defect``, ``implausible_event_time``). Every figure is the
median of ``repeat`` runs after a warm-up; arrays smaller than 64 MB rotate through several copies so
that no run is served from the cache. Per call: a loop of ``calls`` reductions of a tiny
(1, 128) array, clreduce against ``pyopencl.array.sum`` (device-resident) and numpy.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from datetime import date

import numpy as np

from .bench_peers import PEERS, PeerUnavailable, make_peer

SHAPES = [
    (442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000),
    (4096, 65536), (64, 4194304), (1, 268435456), (4194304, 64),
]
# Below this size a run could be served from the last-level cache: rotate input copies.
ROTATE_BELOW = 64 << 20
ROTATE_TOTAL = 256 << 20
# An event duration at or below this is no measurement: no device launches, runs and retires
# a command in 16 ns (Mesa rusticl 22.3.6 on llvmpipe reports start=2, end=3 for every one).
MIN_EVENT_NS = 16
# Nor does any device read memory at 100 TB/s (20x an H200's HBM): a faster figure is the
# timer's, not the device's.
MAX_EVENT_GBPS = 100_000


class EventTimerUnusable(RuntimeError):
    """The device's OpenCL profiling events do not measure time."""


def event_timer_defect(device) -> str | None:
    """Why ``device``'s profiling events cannot time anything, or None where they may.

    Parameters
    ----------
    device : pyopencl.Device
        Or any object with ``profiling_timer_resolution`` (ns).

    Returns
    -------
    str or None
        The reason (timer resolution 0: Mesa rusticl 22.3.6 on llvmpipe), or None. Events
        that pass this can still be implausible: ``implausible_event_time``.
    """
    try:
        resolution = device.profiling_timer_resolution
    except Exception:  # noqa: BLE001 - a driver that cannot say: judge the events themselves
        return None
    if not resolution or resolution <= 0:
        return f"{device.name.strip()} reports a profiling timer resolution of {resolution} ns"
    return None


def implausible_event_time(seconds: float, nbytes: int) -> str | None:
    """Why an event-timed duration for ``nbytes`` of work is no measurement, or None.

    Parameters
    ----------
    seconds : float
        The duration the profiling events give.
    nbytes : int
        The bytes the timed commands read.

    Returns
    -------
    str or None
        The reason when the duration is at most ``MIN_EVENT_NS`` or implies more than
        ``MAX_EVENT_GBPS``; None for a plausible duration.
    """
    if seconds * 1e9 <= MIN_EVENT_NS:
        return f"profiling events give {seconds * 1e9:.0f} ns for {nbytes / 2**20:.2f} MiB of work"
    if nbytes / seconds / 1e9 > MAX_EVENT_GBPS:
        return (f"profiling events give {nbytes / seconds / 1e9:.0f} GB/s, above any device's memory "
                f"({MAX_EVENT_GBPS} GB/s)")
    return None


def event_seconds(events) -> float:
    """Seconds between start and end of each OpenCL profiling event, summed."""
    return sum(e.profile.end - e.profile.start for e in events) * 1e-9


def scaled_shape(rows: int, k: int, max_bytes: int, itemsize: int = 4) -> tuple[int, int]:
    """Scale ``rows`` down (never ``k``) so the array holds at most ``max_bytes``, or if one
    row alone is larger, shorten the row."""
    if k * itemsize > max_bytes:
        return 1, max_bytes // itemsize
    return max(1, min(rows, max_bytes // (k * itemsize))), k


def _copies(nbytes: int) -> int:
    return 1 if nbytes >= ROTATE_BELOW else max(2, min(8, ROTATE_TOTAL // max(nbytes, 1)))


def median_seconds(fn, inputs, repeat: int, warmup: int = 1) -> float:
    """Median wall time of ``fn(x)``, cycling through ``inputs``, after ``warmup`` calls."""
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    times = []
    for i in range(repeat):
        x = inputs[i % len(inputs)]
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth(queue, nbytes: int, repeat: int = 5) -> float:
    """GB/s of a device buffer-to-buffer copy (read + write bytes), median of ``repeat``.

    Raises ``EventTimerUnusable`` where the queue's profiling events cannot time it.
    """
    import pyopencl as cl

    defect = event_timer_defect(queue.device)
    if defect is not None:
        raise EventTimerUnusable(defect)

    src = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes).wait()
    times = []
    for i in range(repeat + 1):
        event = cl.enqueue_copy(queue, dst, src)
        event.wait()
        if i:
            times.append(event_seconds([event]))
    seconds = statistics.median(times)
    defect = implausible_event_time(seconds, 2 * nbytes)
    if defect is not None:
        raise EventTimerUnusable(defect)
    return 2 * nbytes / seconds / 1e9


def host_copy_bandwidth(nbytes: int, repeat: int = 5) -> float:
    """GB/s of ``numpy.copyto`` between two host arrays (read + write bytes)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    seconds = median_seconds(lambda s: np.copyto(dst, s), [src], repeat)
    return 2 * src.nbytes / seconds / 1e9


def _kernel_seconds(prepared: list, repeat: int, nbytes: int) -> float:
    """Median profiling-event time of the reductions in ``prepared``, taken in turn like the
    public calls' rotated inputs: timed on one array alone, a small array sat in the cache and
    the kernel column ran above the device's copy bandwidth (PoCL here, 4 MB arrays: 60-86 GB/s
    against a 64 GB/s copy and ~20 for the calls on the rotated arrays). Raises
    ``EventTimerUnusable`` when the median is implausible for ``nbytes``."""
    prepared[0].enqueue()[-1].wait()
    times = []
    for i in range(repeat):
        events = prepared[i % len(prepared)].enqueue()
        events[-1].wait()
        times.append(event_seconds(events))
    seconds = statistics.median(times)
    defect = implausible_event_time(seconds, nbytes)
    if defect is not None:
        raise EventTimerUnusable(defect)
    return seconds


def _plan_text(plan) -> str:
    return (f"{plan.strategy} {plan.sg_mode}{'/' + str(plan.sg_size) if plan.sg_size else ''} "
            f"wg{plan.wg_size} lanes{plan.lanes} vec{plan.vec}" + (f" split{plan.split}" if plan.split > 1 else ""))


def _gbps(nbytes: int, seconds: float | None) -> float | None:
    return None if seconds is None else round(nbytes / seconds / 1e9, 2)


def bench_shape(queue, prof_queue, rows: int, k: int, op: str, repeat: int, peers, rng,
                event_timer: str | None = None) -> dict:
    """Every implementation on one (rows, k) float32 array; returns one report row.

    ``event_timer``: why the device's events cannot time (the kernel column is then left
    out, as unavailable), or None. The row's ``event_timer`` is the reason found, if any.
    """
    import pyopencl.array as cla

    import clreduce

    from .backends import opencl
    from .plan import Problem

    fn = getattr(clreduce, op)
    first = rng.random((rows, k), dtype=np.float32)
    inputs = [first] + [first.copy() for _ in range(_copies(first.nbytes) - 1)]
    nbytes = first.nbytes
    ref = getattr(np, op)(first.astype(np.float64), axis=-1)

    got = fn(first, axis=-1, queue=queue)
    correct = bool(np.allclose(got, ref, rtol=1e-4, atol=1e-6))
    times = {"public": median_seconds(lambda x: fn(x, axis=-1, queue=queue), inputs, repeat)}

    on_device = [cla.to_device(queue, x) for x in inputs]

    def device_call(d):
        fn(d, axis=-1)
        queue.finish()

    times["device"] = median_seconds(device_call, on_device, repeat)
    del on_device  # the kernel column's copies below take their place, not their company
    problem = Problem(rows=rows, row_len=k, dtype="float32", op=op)
    prepared = [opencl.PreparedReduction(prof_queue, cla.to_device(prof_queue, x), problem) for x in inputs]
    missing = {}
    if event_timer is None:
        try:
            times["kernel"] = _kernel_seconds(prepared, max(repeat, len(prepared)), nbytes)
        except EventTimerUnusable as exc:
            event_timer = str(exc)
    if event_timer is not None:
        times["kernel"] = None
        missing["kernel"] = f"the event timer is unusable ({event_timer})"
    plan = _plan_text(prepared[0].plan)
    del prepared

    for name in peers:
        try:
            peer = make_peer(name, op, (rows, k), np.float32)
        except PeerUnavailable as exc:
            missing[name] = str(exc)
            continue
        times[name] = median_seconds(peer, inputs, repeat)
    row = {"shape": [rows, k], "bytes": nbytes, "correct": correct, "plan": plan,
           "ms": {name: None if t is None else round(t * 1e3, 3) for name, t in times.items()},
           "gbps": {name: _gbps(nbytes, t) for name, t in times.items()}, "unavailable": missing,
           "event_timer": event_timer}
    peer_gbps = {n: g for n, g in row["gbps"].items() if n in peers}
    if peer_gbps:
        best = max(peer_gbps, key=peer_gbps.get)
        row["best_peer"] = best
        row["public_vs_best_peer"] = _ratio(row["gbps"]["public"], peer_gbps[best])
    row["public_vs_device"] = _ratio(row["gbps"]["public"], row["gbps"]["device"])
    return row


def _or_nan(v):
    return float("nan") if v is None else v


def _ratio(a, b):
    """a / b to two places, or None where either is missing or b rounded to 0 GB/s (an array of
    a few bytes: bench --max-mb 1 --shapes 4,8 had divided by zero)."""
    return None if not a or not b else round(a / b, 2)


def per_call(queue, calls: int = 2000) -> dict:
    """Seconds per call on a tiny (1, 128) float32 array: clreduce.sum on a device array
    against ``pyopencl.array.sum``, and numpy in -> numpy out against ``numpy.sum``."""
    import pyopencl.array as cla

    import clreduce

    x = np.random.default_rng(1).random((1, 128), dtype=np.float32)
    d = cla.to_device(queue, x)

    def loop(body) -> float:
        for _ in range(max(10, calls // 20)):
            body()
        queue.finish()
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(calls):
                body()
            queue.finish()
            best.append((time.perf_counter() - t0) / calls)
        return min(best)

    bodies = {
        "clreduce.sum(device array)": lambda: clreduce.sum(d),
        "pyopencl.array.sum": lambda: cla.sum(d),
        "clreduce.sum(numpy)": lambda: clreduce.sum(x, queue=queue),
        "numpy.sum": lambda: np.sum(x),
    }
    result = {}
    for name, body in bodies.items():
        try:
            result[name] = round(loop(body) * 1e6, 1)
        except ImportError as exc:  # pyopencl's reductions need mako
            result[name] = f"not measured ({str(exc).splitlines()[0]})"
    return result


AXIS_SHAPE = (65536, 1024)


def bench_axes(queue, op: str = "sum", max_bytes: int = 256 << 20, repeat: int = 7) -> dict:
    """axis=0 (strided kernel, no transpose) against axis=-1 on one (65536, 1024) float32
    array (rows scaled to ``max_bytes``): public-call wall time, numpy in -> numpy out."""
    import clreduce

    rows, k = scaled_shape(*AXIS_SHAPE, max_bytes)
    x = np.random.default_rng(0).random((rows, k), dtype=np.float32)
    fn = getattr(clreduce, op)
    out = {"shape": [rows, k], "op": op}
    for label, axis in (("axis=-1", -1), ("axis=0", 0)):
        ok = bool(np.allclose(fn(x, axis=axis, queue=queue), getattr(np, op)(x.astype(np.float64), axis=axis),
                              rtol=1e-4, atol=1e-3))
        seconds = median_seconds(lambda a: fn(a, axis=axis, queue=queue), [x], repeat)
        np_seconds = median_seconds(lambda a: getattr(np, op)(a, axis=axis), [x], max(3, repeat // 2))
        out[label] = {"gbps": _gbps(x.nbytes, seconds), "numpy_gbps": _gbps(x.nbytes, np_seconds), "correct": ok}
    out["ratio"] = round(out["axis=0"]["gbps"] / out["axis=-1"]["gbps"], 2)
    return out


def bench_device(device, op: str = "mean", max_bytes: int = 256 << 20, repeat: int = 7, shapes=SHAPES,
                 peers=PEERS, calls: int = 2000, log=print) -> dict:
    """The whole benchmark on one OpenCL device; a JSON-able dict."""
    import pyopencl as cl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    prof_queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    result = {"device": device.name, "platform": device.platform.name, "op": op, "rows": [], "event_timer": None}
    try:
        result["copy_gbps"] = round(copy_bandwidth(prof_queue, max_bytes), 1)
    except EventTimerUnusable as exc:
        result["copy_gbps"], result["event_timer"] = None, str(exc)
    result["host_copy_gbps"] = round(host_copy_bandwidth(max_bytes), 1)
    log(f"# {device.platform.name} / {device.name}: device copy {_figure(result['copy_gbps'])}, "
        f"host memcpy {result['host_copy_gbps']} GB/s (read+write)"
        + (f"; event figures unavailable: {result['event_timer']}" if result["event_timer"] else ""))
    rng = np.random.default_rng(0)
    for rows, k in shapes:
        r, kk = scaled_shape(rows, k, max_bytes)
        row = bench_shape(queue, prof_queue, r, kk, op, repeat, peers, rng, event_timer=result["event_timer"])
        result["event_timer"] = row["event_timer"]   # once found broken, not asked again
        row["seed_shape"] = [rows, k]
        result["rows"].append(row)
        g = row["gbps"]
        peers_text = "  ".join(f"{n} {g[n]:.2f}" for n in peers if n in g)
        kernel = "n/a" if g["kernel"] is None else f"{g['kernel']:6.2f}"
        log(f"{r:>9}x{kk:<10} public {g['public']:6.2f}  device {g['device']:6.2f}  kernel {kernel:>6}  "
            f"| {peers_text}  GB/s  {'ok ' if row['correct'] else 'BAD'} {row['plan']}")
    result["axes"] = bench_axes(queue, max_bytes=max_bytes, repeat=repeat)
    a = result["axes"]
    log(f"# axes {a['shape'][0]}x{a['shape'][1]} sum: axis=-1 {a['axis=-1']['gbps']} GB/s, axis=0 "
        f"{a['axis=0']['gbps']} GB/s (ratio {a['ratio']})")
    if calls:
        result["per_call_us"] = per_call(queue, calls)
        log("# per call (1x128 float32, us): " + ", ".join(f"{n} {v}" for n, v in result["per_call_us"].items()))
    return result


def run(devices=None, op: str = "mean", max_bytes: int = 256 << 20, repeat: int = 7, json_path=None,
        peers=PEERS, calls: int = 2000, shapes=SHAPES, log=print) -> dict:
    """Benchmark every OpenCL device (or ``devices``); optionally write JSON.

    Raises
    ------
    TypeError, ValueError
        ``max_bytes`` or ``repeat`` not a positive int, ``calls`` not a non-negative int.
    """
    for name, value, least in (("max_bytes", max_bytes, 1), ("repeat", repeat, 1), ("calls", calls, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"bench.run: {name} must be an int, not {type(value).__name__}")
        if value < least:
            raise ValueError(f"bench.run: {name} must be >= {least}, not {value}")
    from .backends import opencl
    from .bench_peers import host_threads

    devices = devices if devices is not None else opencl.all_devices()
    report = {"date": date.today().isoformat(), "host": platform.processor() or platform.machine(),
              "host_threads": host_threads(), "numpy": np.__version__, "op": op, "max_bytes": max_bytes,
              "repeat": repeat, "peers": list(peers), "versions": _versions(peers), "devices": []}
    for device in devices:
        report["devices"].append(bench_device(device, op=op, max_bytes=max_bytes, repeat=repeat, shapes=shapes,
                                              peers=peers, calls=calls, log=log))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(report, fh, indent=1)
    return report


def _versions(peers) -> dict:
    import importlib.metadata as md

    versions = {}
    for dist in ("numpy", "pyopencl", "torch", "onnxruntime"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return versions


_COLUMNS = ("public", "device", "kernel")


def _figure(gbps) -> str:
    return "n/a" if gbps is None else f"{gbps} GB/s"


def markdown(report: dict) -> str:
    """README tables: per device, one row per shape, GB/s of every implementation."""
    peers = report.get("peers", [])
    lines = []
    for d in report["devices"]:
        lines += [f"**{d['platform']} / {d['device']}** ({report['op']}, GB/s read; device copy "
                  f"{_figure(d['copy_gbps'])}, host memcpy {d['host_copy_gbps']} GB/s, read+write)", ""]
        head = ["shape", "MB", "clreduce numpy in", "clreduce device array", "kernel", *peers,
                "numpy in / best peer", "plan"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in d["rows"]:
            g = row["gbps"]
            cells = [f"{row['shape'][0]}×{row['shape'][1]}", f"{row['bytes'] / 2**20:.0f}"]
            cells += ["n/a" if g[c] is None else f"{g[c]:.2f}" for c in _COLUMNS]
            cells += [f"{g[p]:.2f}" if p in g else "—" for p in peers]
            cells += [f"{_or_nan(row.get('public_vs_best_peer')):.2f} ({row.get('best_peer', '—')})",
                      row["plan"] + ("" if row["correct"] else " **WRONG**")]
            lines.append("| " + " | ".join(cells) + " |")
        a = d.get("axes")
        if a:
            lines += ["", f"axis=0 vs axis=-1, {a['shape'][0]}×{a['shape'][1]} sum, public call: "
                      f"{a['axis=0']['gbps']} vs {a['axis=-1']['gbps']} GB/s (ratio {a['ratio']}; numpy "
                      f"{a['axis=0']['numpy_gbps']} / {a['axis=-1']['numpy_gbps']})."]
        if d.get("per_call_us"):
            lines += ["", "Per call, 1×128 float32 (µs): "
                      + ", ".join(f"{n} {v}" for n, v in d["per_call_us"].items()) + "."]
        unavailable = {n: why for row in d["rows"] for n, why in row["unavailable"].items() if n != "kernel"}
        if d.get("event_timer"):
            what = "Kernel-event and device-copy figures" if d["copy_gbps"] is None else "Kernel-event figures"
            lines += ["", f"{what}: not measured, the device's event timer is unusable ({d['event_timer']})."]
        if unavailable:
            lines += ["", "Not measured: " + "; ".join(f"{n}: {why}" for n, why in unavailable.items()) + "."]
        lines.append("")
    return "\n".join(lines).rstrip()


def plot(report: dict, path: str) -> None:
    """GB/s against row length K, one series per implementation, the copy bandwidth as a
    line; one panel per device. Needs matplotlib (extra ``[plot]``)."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install 'clreduce[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    devices = report["devices"]
    fig, axes = plt.subplots(1, len(devices), figsize=(7 * len(devices), 5), squeeze=False)
    for ax, d in zip(axes[0], devices):
        rows = sorted(d["rows"], key=lambda r: r["shape"][1])
        ks = [r["shape"][1] for r in rows]
        for name in (*_COLUMNS, *report.get("peers", [])):
            ys = [r["gbps"].get(name) for r in rows]
            if any(y is not None for y in ys):
                label = {"public": "clreduce (numpy in/out)", "device": "clreduce (device array)",
                         "kernel": "clreduce kernel events"}.get(name, name)
                ax.plot(ks, [float("nan") if y is None else y for y in ys], marker="o", label=label)
        if d["copy_gbps"] is not None:   # None: the device's event timer could not time the copy
            ax.axhline(d["copy_gbps"], color="grey", linestyle="--", label="device copy (read+write GB/s)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("row length K (reduced axis)")
        ax.set_ylabel("GB/s read")
        ax.set_title(f"{report['op']} — {d['platform']}\n{d['device']}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
