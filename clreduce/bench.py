"""Benchmark harness for the OpenCL backend (``clreduce bench``).

Fixed shapes (DESIGN.md), float32, reduced along the last axis. On CPU devices rows are
scaled down so each array is about ``max_bytes`` (256 MB by default). For each device:
the kernel time from OpenCL profiling events (median after warm-up), numpy's time for the
same reduction in the same process, and the device's buffer-copy bandwidth. GB/s is bytes
read / time; copy GB/s counts read + write.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from datetime import date

import numpy as np

SHAPES = [
    (442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000),
    (4096, 65536), (64, 4194304), (1, 268435456), (4194304, 64),
]


def scaled_shape(rows: int, k: int, max_bytes: int, itemsize: int = 4) -> tuple[int, int]:
    """Scale ``rows`` down (never ``k``) so the array holds at most ``max_bytes``, or if one
    row alone is larger, shorten the row."""
    if k * itemsize > max_bytes:
        return 1, max_bytes // itemsize
    return max(1, min(rows, max_bytes // (k * itemsize))), k


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth(queue, nbytes: int, repeat: int = 5) -> float:
    """GB/s of a device buffer-to-buffer copy (read + write bytes), median of ``repeat``."""
    import pyopencl as cl

    src = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes).wait()
    times = []
    for i in range(repeat + 1):
        event = cl.enqueue_copy(queue, dst, src)
        event.wait()
        if i:
            times.append((event.profile.end - event.profile.start) * 1e-9)
    return 2 * nbytes / statistics.median(times) / 1e9


def bench_device(device, op: str = "mean", max_bytes: int = 256 << 20, repeat: int = 7,
                 shapes=SHAPES, force=None, log=print) -> dict:
    """Time ``op`` over the shape list on one OpenCL device; returns a JSON-able dict."""
    import pyopencl as cl

    from .backends import opencl
    from .plan import Problem

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    result = {"device": device.name, "platform": device.platform.name, "op": op, "rows": []}
    result["copy_gbps"] = round(copy_bandwidth(queue, max_bytes), 1)
    log(f"# {device.platform.name} / {device.name}: copy {result['copy_gbps']} GB/s (read+write)")
    rng = np.random.default_rng(0)
    for rows, k in shapes:
        r, kk = scaled_shape(rows, k, max_bytes)
        x = rng.random((r, kk), dtype=np.float32)
        problem = Problem(rows=r, row_len=kk, dtype="float32", op=op)
        prepared = opencl.PreparedReduction(queue, x, problem, force)
        prepared.enqueue()[-1].wait()  # warm-up (and first-touch of the buffer)
        times = []
        for _ in range(repeat):
            events = prepared.enqueue()
            events[-1].wait()
            times.append(sum((e.profile.end - e.profile.start) for e in events) * 1e-9)
        t_cl = statistics.median(times)
        got = prepared.result()
        ref_fn = getattr(np, op)
        ref = ref_fn(x, axis=-1)
        ok = bool(np.allclose(got, ref, rtol=1e-4, atol=1e-6))
        t_np = _median_time(lambda: ref_fn(x, axis=-1), max(3, repeat // 2))
        plan = prepared.plan
        row = {
            "shape": [r, kk], "seed_shape": [rows, k], "bytes": x.nbytes,
            "clreduce_gbps": round(x.nbytes / t_cl / 1e9, 2), "numpy_gbps": round(x.nbytes / t_np / 1e9, 2),
            "clreduce_ms": round(t_cl * 1e3, 3), "numpy_ms": round(t_np * 1e3, 3), "correct": ok,
            "plan": f"{plan.strategy} {plan.sg_mode}{'/' + str(plan.sg_size) if plan.sg_size else ''} "
                    f"wg{plan.wg_size} lanes{plan.lanes} vec{plan.vec}" + (f" split{plan.split}" if plan.split > 1 else ""),
        }
        result["rows"].append(row)
        log(f"{r:>9}x{kk:<10} clreduce {row['clreduce_gbps']:7.2f} GB/s  numpy {row['numpy_gbps']:7.2f} GB/s"
            f"  {'ok ' if ok else 'BAD'} {row['plan']}")
        del prepared, x
    return result


AXIS_SHAPE = (65536, 1024)


def _kernel_seconds(prepared, repeat: int) -> float:
    prepared.enqueue()[-1].wait()
    times = []
    for _ in range(repeat):
        events = prepared.enqueue()
        events[-1].wait()
        times.append(sum((e.profile.end - e.profile.start) for e in events) * 1e-9)
    return statistics.median(times)


def bench_axes(device, op: str = "sum", max_bytes: int = 256 << 20, repeat: int = 7, log=print) -> dict:
    """axis=0 (strided, no transpose) against axis=-1 on one (65536, 1024) float32 array
    (rows scaled to ``max_bytes``); both timed from events of the same run."""
    import pyopencl as cl

    from .backends import opencl
    from .plan import Problem

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rows, k = scaled_shape(*AXIS_SHAPE, max_bytes)
    x = np.random.default_rng(0).random((rows, k), dtype=np.float32)
    out = {"device": device.name, "platform": device.platform.name, "shape": [rows, k], "op": op}
    for label, problem, ref in (
        ("axis=-1", Problem(rows=rows, row_len=k, dtype="float32", op=op), getattr(np, op)(x, axis=-1)),
        ("axis=0", Problem(rows=1, row_len=rows, inner=k, dtype="float32", op=op), getattr(np, op)(x, axis=0)),
    ):
        prepared = opencl.PreparedReduction(queue, x, problem)
        seconds = _kernel_seconds(prepared, repeat)
        ok = bool(np.allclose(prepared.result(), ref, rtol=1e-4, atol=1e-3))
        out[label] = {"gbps": round(x.nbytes / seconds / 1e9, 2), "correct": ok, "strategy": prepared.plan.strategy}
    out["ratio"] = round(out["axis=0"]["gbps"] / out["axis=-1"]["gbps"], 2)
    log(f"# {device.platform.name}: {rows}x{k} {op}: axis=-1 {out['axis=-1']['gbps']} GB/s, "
        f"axis=0 {out['axis=0']['gbps']} GB/s (ratio {out['ratio']})")
    return out


def run(devices=None, op: str = "mean", max_bytes: int = 256 << 20, repeat: int = 7, json_path=None, log=print) -> dict:
    """Benchmark every OpenCL device (or ``devices``); optionally write JSON."""
    from .backends import opencl

    devices = devices if devices is not None else opencl.all_devices()
    report = {"date": date.today().isoformat(), "host": platform.processor() or platform.machine(),
              "numpy": np.__version__, "op": op, "max_bytes": max_bytes, "devices": [], "axes": []}
    for device in devices:
        report["devices"].append(bench_device(device, op=op, max_bytes=max_bytes, repeat=repeat, log=log))
        report["axes"].append(bench_axes(device, max_bytes=max_bytes, repeat=repeat, log=log))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(report, fh, indent=1)
    return report


def markdown(report: dict) -> str:
    """A README table: one row per shape, a column pair per device."""
    devs = report["devices"]
    head = "| shape (rows x K) | numpy GB/s | " + " | ".join(f"{d['platform'].split()[0]} clreduce GB/s" for d in devs) + " | best plan |"
    lines = [head, "|" + "---|" * (3 + len(devs))]
    for i, row in enumerate(devs[0]["rows"]):
        numpy_best = max(d["rows"][i]["numpy_gbps"] for d in devs)
        cells = [f"{d['rows'][i]['clreduce_gbps']:.2f}" for d in devs]
        best = max(devs, key=lambda d: d["rows"][i]["clreduce_gbps"])
        lines.append(f"| {row['shape'][0]} x {row['shape'][1]} | {numpy_best:.2f} | " + " | ".join(cells)
                     + f" | {best['rows'][i]['plan']} |")
    copies = ", ".join(f"{d['platform'].split()[0]} {d['copy_gbps']} GB/s" for d in devs)
    lines.append("")
    lines.append(f"Device copy bandwidth (read+write) in the same run: {copies}.")
    if report.get("axes"):
        lines += ["", "| device | shape | axis=-1 GB/s | axis=0 GB/s | axis=0 / axis=-1 |", "|---|---|---|---|---|"]
        for a in report["axes"]:
            lines.append(f"| {a['platform'].split()[0]} | {a['shape'][0]} x {a['shape'][1]} ({a['op']}) | "
                         f"{a['axis=-1']['gbps']:.2f} | {a['axis=0']['gbps']:.2f} | {a['ratio']:.2f} |")
    return "\n".join(lines)
