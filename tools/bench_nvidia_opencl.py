#!/usr/bin/env python3
"""clreduce on NVIDIA's OpenCL driver beside the CUDA backend, on the same GPU, in one process.

For each shape of DESIGN.md's list (full size) and each op, reduced along the last axis:

* ``opencl``       ``clreduce.<op>(x, axis=-1)`` on a ``pyopencl.array.Array`` on NVIDIA's OpenCL
  device (the public call; the result stays a device array)
* ``opencl kernel`` the same plan's passes alone, from OpenCL profiling events (GPU time)
* ``cuda``         ``clreduce.<op>(x, axis=-1)`` on a cupy array holding the same values
* ``cuda kernel``  the CUDA plan alone, from CUDA events around one run (GPU time)
* ``copy``         a device-to-device copy of the same bytes through each API (read + write)

Timing: wall time of batches of back-to-back calls ended by a synchronisation (OpenCL:
``queue.finish()``; CUDA: a stream synchronise), after warm-up; the median of ``--batches``
batch means. Inputs rotate over enough copies that a batch reads at least ``--rotate-bytes``
(the 50 MB L2 is not what is timed). GB/s = bytes read / time. Every result is checked
against numpy (float64) first; the report says which plan each API ran.

    python tools/bench_nvidia_opencl.py --json benchmarks/nvidia_opencl_h100.json
    python tools/bench_nvidia_opencl.py --ops mean,max,argmax,var --dtypes float32 --json out.json

Needs pyopencl with NVIDIA's OpenCL ICD visible (``OCL_ICD_VENDORS``: a folder holding an
``.icd`` file whose content is the path of ``libnvidia-opencl.so.1``) and CuPy.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SHAPES = [
    (442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000),
    (4096, 65536), (64, 4194304), (1, 268435456), (4194304, 64),
]


def nvidia_queue():
    """A queue on the first NVIDIA OpenCL device, or SystemExit naming what was found."""
    import pyopencl as cl

    from clreduce.backends import opencl

    found = []
    for device in opencl.all_devices():
        found.append(f"{device.platform.name} / {device.name}")
        if "nvidia" in device.platform.name.lower():
            return opencl.queue_for(device)
    raise SystemExit(f"no NVIDIA OpenCL device (found: {found or 'none'}); set OCL_ICD_VENDORS "
                     f"(pyopencl {cl.VERSION_TEXT})")


def timed(fn, inputs, sync, *, batches: int, target_s: float = 0.015, warmup: int = 3) -> float:
    """Median seconds per call over ``batches`` batches of back-to-back calls."""
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    sync()
    t0 = time.perf_counter()
    for i in range(3):
        fn(inputs[i % len(inputs)])
    sync()
    est = max((time.perf_counter() - t0) / 3, 1e-6)
    calls = max(len(inputs), int(min(400, max(3, math.ceil(target_s / est)))))
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        sync()
        per_call.append((time.perf_counter() - t0) / calls)
    return statistics.median(per_call)


def event_seconds(prepared, runs: int) -> float:
    """Median GPU seconds of one run of the plan's passes (profiling events), after a warm-up."""
    times = []
    for i in range(runs + 1):
        events = prepared[i % len(prepared)].enqueue()
        events[-1].wait()
        times.append(sum(e.profile.end - e.profile.start for e in events) * 1e-9)
    return statistics.median(times[1:])


def cuda_event_seconds(prepared, runs: int) -> float:
    """Median GPU seconds of one ``PreparedReduction.run`` (CUDA events), after a warm-up."""
    import cupy

    times = []
    for i in range(runs + 1):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        prepared[i % len(prepared)].run()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return statistics.median(times[1:])


def reference(host: np.ndarray, op: str) -> np.ndarray:
    if op in ("argmax", "argmin"):
        return getattr(np, op)(host, axis=-1)
    return getattr(np, op)(host.astype(np.float64), axis=-1)


def error(got: np.ndarray, ref: np.ndarray, op: str) -> float:
    if op in ("argmax", "argmin"):
        return float(np.mean(got != ref))
    scale = np.maximum(np.abs(ref), 1e-3)
    return float(np.max(np.abs(got.astype(np.float64) - ref) / scale))


def plan_text(p) -> str:
    d = dict(p.passes[0].defines)
    return (f"{p.strategy} {p.sg_mode} lanes {p.lanes} wg {p.wg_size} vec {p.vec}"
            + (f" split {p.split}" if p.split > 1 else "") + (f" unroll {d['UNROLL']}" if "UNROLL" in d else ""))


def bench(shapes, dtypes, ops, *, rotate_bytes: int, batches: int, log=print, json_path=None,
          pool_modes=()) -> dict:
    import cupy
    import pyopencl as cl
    import pyopencl.array as cla

    import clreduce
    from clreduce.backends import cl_pool, opencl
    from clreduce.backends.cuda import PreparedReduction as CudaPrepared
    from clreduce.plan import Problem

    queue = nvidia_queue()
    device = queue.device
    prof_queue = cl.CommandQueue(queue.context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    caps = opencl.caps_of(device)
    info = {"opencl_device": device.name.strip(), "platform": device.platform.name.strip(),
            "driver": device.driver_version, "opencl_version": device.version,
            "caps_subgroup_mode": sorted(m for m in ("ptx_shuffle",) if getattr(caps, m, False)),
            "caps_notes": list(caps.notes), "cupy": cupy.__version__, "pyopencl": cl.VERSION_TEXT,
            "gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    log(f"# {info['gpu']}: OpenCL {info['platform']} / {info['opencl_device']} driver {info['driver']}")
    rows_out = []
    report = {"info": info, "date": _dt.date.today().isoformat(), "rows": rows_out,
              "method": "wall time of batches of back-to-back calls ended by a synchronisation, after 3 warm-up "
                        f"calls; median of {batches} batch means; inputs rotate over copies totalling >= "
                        f"{rotate_bytes >> 20} MiB; GB/s = bytes read / time (copy: read + write)"}
    rng = np.random.default_rng(0)
    for dtype in dtypes:
        for rows, k in shapes:
            host = (rng.standard_normal((rows, k), dtype=np.float32) + 0.25).astype(dtype)
            nbytes = host.nbytes
            copies = max(1, math.ceil(rotate_bytes / nbytes))
            cl_xs = [cla.to_device(queue, host) for _ in range(copies)]
            cu_xs = [cupy.asarray(host) for _ in range(copies)]
            queue.finish()
            cl_dst = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
            cu_dst = cupy.empty_like(cu_xs[0])
            stream = cupy.cuda.get_current_stream()
            cl_sync, cu_sync = queue.finish, stream.synchronize
            copy_cl = 2 * nbytes / timed(lambda x: cl.enqueue_copy(queue, cl_dst, x.base_data, byte_count=nbytes),
                                         cl_xs, cl_sync, batches=batches) / 1e9
            copy_cu = 2 * nbytes / timed(
                lambda x: cupy.cuda.runtime.memcpyAsync(cu_dst.data.ptr, x.data.ptr, nbytes,
                                                        cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr),
                cu_xs, cu_sync, batches=batches) / 1e9
            del cl_dst, cu_dst
            for op in ops:
                fn = getattr(clreduce, op)
                problem = Problem(rows, k, dtype, op)
                ref = reference(host, op)
                entry = {"dtype": dtype, "rows": rows, "k": k, "op": op, "bytes": nbytes,
                         "copy_opencl_gbps": copy_cl, "copy_cuda_gbps": copy_cu, "gbps": {}, "err": {}}
                cl_prep = [opencl.PreparedReduction(prof_queue, x, problem) for x in cl_xs]
                cu_prep = [CudaPrepared(x, problem) for x in cu_xs]
                entry["plan_opencl"], entry["plan_cuda"] = plan_text(cl_prep[0].plan), plan_text(cu_prep[0].plan)
                entry["err"]["opencl"] = error(fn(cl_xs[0], axis=-1).get(), ref, op)
                entry["err"]["cuda"] = error(cupy.asnumpy(fn(cu_xs[0], axis=-1)), ref, op)
                cl_prep[0].enqueue()
                entry["err"]["opencl kernel"] = error(cl_prep[0].result(), ref, op)
                entry["gbps"]["opencl kernel"] = nbytes / event_seconds(cl_prep, 2 * batches + 1) / 1e9
                entry["gbps"]["cuda kernel"] = nbytes / cuda_event_seconds(cu_prep, 2 * batches + 1) / 1e9
                impls = {
                    "opencl": (lambda x: fn(x, axis=-1), cl_xs, cl_sync),
                    "cuda": (lambda x: fn(x, axis=-1), cu_xs, cu_sync),
                }
                for name, (call, inputs, sync) in impls.items():
                    entry["gbps"][name] = nbytes / timed(call, inputs, sync, batches=batches) / 1e9
                entry["pool_mode"] = cl_pool.mode_for(queue.context, queue)
                for mode in pool_modes:  # the public call with cl_pool's output mode forced
                    cl_pool.mode_override = mode
                    try:
                        entry["gbps"][f"opencl pool={mode}"] = nbytes / timed(
                            lambda x: fn(x, axis=-1), cl_xs, cl_sync, batches=batches) / 1e9
                    finally:
                        cl_pool.mode_override = None
                g = entry["gbps"]
                entry["opencl_over_cuda"] = g["opencl"] / g["cuda"]
                entry["kernel_opencl_over_cuda"] = g["opencl kernel"] / g["cuda kernel"]
                rows_out.append(entry)
                modes = "".join(f" {n.split()[1]} {v:.0f}" for n, v in g.items() if n.startswith("opencl pool="))
                log(f"{dtype:8s} {rows:>9d}x{k:<9d} {op:7s} opencl {g['opencl']:6.0f}{modes}"
                    f" (kernel {g['opencl kernel']:6.0f})"
                    f"  cuda {g['cuda']:6.0f} (kernel {g['cuda kernel']:6.0f})  ratio {entry['opencl_over_cuda']:.2f}"
                    f" kernels {entry['kernel_opencl_over_cuda']:.2f}"
                    f"  copy cl {copy_cl:5.0f} cu {copy_cu:5.0f}  err {max(entry['err'].values()):.1e}"
                    f"  [{entry['plan_opencl']}]")
                del cl_prep, cu_prep
            del cl_xs, cu_xs
            cupy.get_default_memory_pool().free_all_blocks()
            if json_path:
                Path(json_path).write_text(json.dumps(report, indent=1))
    return report


def _pool_text(r: dict) -> str:
    """cl_pool's mode for the device, and the public call's GB/s with each forced mode."""
    forced = [f"{name.split('=')[1]} {v:.0f}" for name, v in r["gbps"].items() if name.startswith("opencl pool=")]
    return r.get("pool_mode", "-") + (f" ({', '.join(forced)})" if forced else "")


def markdown(report: dict) -> str:
    info = report["info"]
    lines = [f"{info['gpu']}, {report['date']}: NVIDIA OpenCL ({info['platform']}, driver {info['driver']}, "
             f"pyopencl {info['pyopencl']}) beside the CUDA backend (CuPy {info['cupy']}), one process. "
             f"{report['method']}.", "",
             "`OpenCL` and `CUDA` are the public call; the kernel columns are GPU time from profiling "
             "events. Target (issue 11): OpenCL >= 85 % of CUDA on arrays >= 256 MB, >= 60 % below.", "",
             "| op | dtype | shape | MiB | OpenCL | CUDA | OpenCL / CUDA | OpenCL kernel | CUDA kernel "
             "| kernel OpenCL / CUDA | target | copy OpenCL | copy CUDA | OpenCL plan | buffer pool |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|"]
    for r in report["rows"]:
        g = r["gbps"]
        target = 0.85 if r["bytes"] >= 256 * 10**6 else 0.60
        kr = r.get("kernel_opencl_over_cuda", g["opencl kernel"] / g["cuda kernel"])
        met = lambda v: "met" if v >= target else "**missed**"  # noqa: E731
        lines.append(f"| {r['op']} | {r['dtype']} | {r['rows']}×{r['k']} | {r['bytes'] / 2**20:.0f} | "
                     f"{g['opencl']:.0f} | {g['cuda']:.0f} | {r['opencl_over_cuda']:.2f} | {g['opencl kernel']:.0f} | "
                     f"{g['cuda kernel']:.0f} | {kr:.2f} | ≥ {target:.2f}: public {met(r['opencl_over_cuda'])}, "
                     f"kernel {met(kr)} | {r['copy_opencl_gbps']:.0f} | {r['copy_cuda_gbps']:.0f} | "
                     f"{r['plan_opencl']} | {_pool_text(r)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default="mean")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--shapes", default=None, help="e.g. 1048576x32,64x4194304 (default: DESIGN.md's list)")
    ap.add_argument("--batches", type=int, default=7)
    ap.add_argument("--rotate-bytes", type=int, default=512 << 20)
    ap.add_argument("--json", default=None, help="file for the report (markdown beside it, .md)")
    ap.add_argument("--pool-modes", default="", help="also time the public call with clreduce's buffer pool "
                    "forced to these modes (off,reuse: backends/cl_pool.py)")
    ap.add_argument("--from-json", default=None, help="re-render the markdown of a saved report (no GPU)")
    args = ap.parse_args(argv)
    if args.from_json:
        print(markdown(json.loads(Path(args.from_json).read_text())), end="")
        return 0
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    t0 = time.time()
    report = bench(shapes, [d for d in args.dtypes.split(",") if d], [o for o in args.ops.split(",") if o],
                   rotate_bytes=args.rotate_bytes, batches=args.batches, json_path=args.json,
                   pool_modes=[m for m in args.pool_modes.split(",") if m])
    md = markdown(report)
    if args.json:
        Path(args.json).with_suffix(".md").write_text(md)
    print(md)
    print(f"bench took {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
