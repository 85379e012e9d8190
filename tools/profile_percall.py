#!/usr/bin/env python3
"""Where the microseconds of one public call go: each step of the fast path timed alone.

For the CUDA backend (``--cuda``: cupy and CUDA torch inputs at 1x128) and for an OpenCL
device (``--opencl SELECTOR``; on the GPU machine NVIDIA's driver), every piece a learned
call runs is timed in a loop of its own (best of ``--repeats`` loops of ``--calls``; ns per
call): the signature and its parts, the cache lookup, output allocation, stream lookup,
the launch (CuPy's ``Function.__call__`` beside ``cuLaunchKernel`` with a ready parameter
block), the whole public call and the peers; then a cProfile of the public call.
On OpenCL it also times buffer creation and release, one enqueue, and whether releasing a
buffer waits for the device (a release behind a long kernel), and back-to-back calls on a
1 GiB array against the kernel's own time (does the host overlap the GPU?).

    python tools/profile_percall.py --cuda --opencl nvidia --json profile.json

A diagnostic, not a benchmark: the steps overlap in the real call and do not add up.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import clreduce  # noqa: E402
from clreduce import fastpath  # noqa: E402


def per_call(fn, calls: int, repeats: int) -> float:
    """Best of ``repeats`` loops: ns per call of ``fn``."""
    for _ in range(min(calls, 200)):
        fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return round(best, 1)


def profile_of(fn, calls: int, top: int = 25) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def _key(a, op="sum", axis=None):
    return fastpath.signature(op, op, a, axis, None, None, False, 0.0, False, None, None, {})


def common_steps(a, calls, repeats) -> dict:
    from clreduce import config, tuning

    key = _key(a)
    return {"signature": per_call(lambda: _key(a), calls, repeats),
            "signature axis=-1 (mean)": per_call(lambda: _key(a, "mean", -1), calls, repeats),
            "config.call_env": per_call(config.call_env, calls, repeats),
            "tuning.state": per_call(tuning.state, calls, repeats),
            "config.fast_path": per_call(config.fast_path, calls, repeats),
            "hash(key)": per_call(lambda: hash(key), calls, repeats),
            "fastpath.lookup": per_call(lambda: fastpath.lookup(key), calls, repeats)}


# ---- CUDA ----------------------------------------------------------------------------------

def cuda_profile(calls: int, repeats: int) -> dict:
    import cupy


    report = {}
    x = cupy.random.default_rng(1).random((1, 128), dtype=cupy.float32)
    f32 = np.dtype("float32")
    steps = {"cupy.empty(())": lambda: cupy.empty((), f32), "cupy.ndarray(())": lambda: cupy.ndarray((), f32),
             "cupy.cuda.alloc(4)": lambda: cupy.cuda.alloc(4),
             "cupy get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
             "runtime.getDevice": cupy.cuda.runtime.getDevice, "x.data.ptr": lambda: x.data.ptr,
             "x.device.id": lambda: x.device.id, "x.data.device_id": lambda: x.data.device_id,
             "x.shape, x.strides, x.dtype": lambda: (x.shape, x.strides, x.dtype)}
    raw = getattr(cupy.cuda.stream, "get_current_stream_ptr", None)
    if raw is not None:
        steps["cupy.cuda.stream.get_current_stream_ptr"] = raw
    clreduce.sum(x)
    clreduce.sum(x)
    entry = fastpath.lookup(_key(x))
    launcher = entry.launch.__self__ if entry is not None else None
    if launcher is not None:
        out = cupy.ndarray((), f32)
        fn, grid, block, _, _, scalars = launcher.base.steps[0]
        zero = np.uint64(0)
        steps["Function.__call__ (CuPy marshalling)"] = lambda: fn(grid, block, (x, zero, out, zero) + scalars, 0,
                                                                   None)
        pointers = (x.data.ptr, out.data.ptr, 0)
        steps["launcher.run (cuLaunchKernel, ready block)"] = lambda: launcher.run(pointers, 0)
        steps["launcher.cupy_array (whole launcher)"] = lambda: launcher.cupy_array(x, {})
        steps["Entry.__call__"] = lambda: entry(x, None, {})
    steps["clreduce.sum(cupy)"] = lambda: clreduce.sum(x)
    steps["cupy.sum"] = lambda: cupy.sum(x)
    report["cupy"] = {name: per_call(fn, calls, repeats) for name, fn in steps.items()}
    report["cupy"].update(common_steps(x, calls, repeats))
    cupy.cuda.Device().synchronize()
    report["cprofile clreduce.sum(cupy)"] = profile_of(lambda: clreduce.sum(x), calls)
    try:
        import torch
    except ImportError:
        return report
    t = torch.from_dlpack(x).clone()
    clreduce.sum(t)
    clreduce.sum(t)
    tentry = fastpath.lookup(_key(t))
    template = torch.empty(0, dtype=torch.float32, device=t.device)
    tsteps = {"torch.empty(())": lambda: torch.empty((), dtype=torch.float32, device=t.device),
              "torch.empty((), device=torch.device)": lambda: torch.empty((), dtype=torch.float32,
                                                                          device=torch.device("cuda", 0)),
              "template.new_empty(())": lambda: template.new_empty(()),
              "t.new_empty((), dtype=) (the launcher's)": lambda: t.new_empty((), dtype=torch.float32),
              "t.data_ptr()": t.data_ptr, "torch raw stream": lambda: torch._C._cuda_getCurrentRawStream(0),
              "t.shape": lambda: t.shape, "t.stride()": t.stride, "t.dtype": lambda: t.dtype,
              "t.get_device()": t.get_device, "t.is_neg()": t.is_neg, "t.is_cuda": lambda: t.is_cuda}
    if tentry is not None:
        tsteps["launcher.torch_tensor (whole launcher)"] = lambda: tentry.launch(t, {})
    tsteps["clreduce.sum(torch)"] = lambda: clreduce.sum(t)
    tsteps["torch.sum"] = lambda: torch.sum(t)
    report["torch"] = {name: per_call(fn, calls, repeats) for name, fn in tsteps.items()}
    report["torch"].update(common_steps(t, calls, repeats))
    torch.cuda.synchronize()
    report["cprofile clreduce.sum(torch)"] = profile_of(lambda: clreduce.sum(t), calls)
    # the shape: float16 8192x1000 mean over the rows, torch input (host time per call
    # with the GPU kept busy; compare torch.mean on the same tensor)
    h = torch.randn(8192, 1000, device=t.device, dtype=torch.float16)
    clreduce.mean(h, axis=-1)
    clreduce.mean(h, axis=-1)
    hentry = fastpath.lookup(fastpath.signature("mean", "mean", h, -1, None, None, False, 0.0, False, None, None,
                                                {}))
    hsteps = {"clreduce.mean(h, axis=-1)": lambda: clreduce.mean(h, axis=-1),
              "torch.mean(h, dim=-1)": lambda: torch.mean(h, dim=-1),
              "h.new_empty((8192,), dtype=)": lambda: h.new_empty((8192,), dtype=torch.float16),
              "h.new_empty((8192,))": lambda: h.new_empty((8192,)),
              "torch.empty((8192,), dtype=, device=)": lambda: torch.empty((8192,), dtype=torch.float16,
                                                                           device=h.device)}
    if hentry is not None:
        hsteps["launcher.torch_tensor (whole launcher)"] = lambda: hentry.launch(h, {})
    report["torch f16 8192x1000"] = {name: per_call(fn, calls, repeats) for name, fn in hsteps.items()}
    torch.cuda.synchronize()
    report["cprofile clreduce.mean(h f16 8192x1000)"] = profile_of(lambda: clreduce.mean(h, axis=-1), calls)
    return report


# ---- OpenCL --------------------------------------------------------------------------------

def opencl_profile(selector: str, calls: int, repeats: int, big_rows: int = 16777216) -> dict:
    import pyopencl as cl
    import pyopencl.array as cla

    from clreduce.backends import opencl

    try:
        queue = opencl.queue_for(selector)
    except Exception:  # noqa: BLE001 - a platform name (NVIDIA CUDA) instead of a selector
        device = next(dev for p in cl.get_platforms() if selector.lower() in p.name.lower() for dev in p.get_devices())
        queue = opencl.queue_for(device)
    ctx = queue.context
    report = {"device": queue.device.name.strip(), "platform": queue.device.platform.name.strip()}
    x = np.random.default_rng(1).random((1, 128), dtype=np.float32)
    d = cla.to_device(queue, x)
    clreduce.sum(d)
    clreduce.sum(d)
    queue.finish()
    entry = fastpath.lookup(_key(d))
    rw = cl.mem_flags.READ_WRITE
    steps = {"cl.Buffer(4) + release": lambda: cl.Buffer(ctx, rw, 4).release(),
             "cl.Buffer(4) (freed by gc)": lambda: cl.Buffer(ctx, rw, 4),
             "cl.Buffer(64 MiB) + release": lambda: cl.Buffer(ctx, rw, 64 << 20).release(),
             "cla.empty(4)": lambda: cla.empty(queue, 1, np.float32)}
    if entry is not None:
        launcher = entry.launch.__self__
        own = launcher.per_thread.get(__import__("threading").get_ident())
        kernel = own[0][0]
        gsize, lsize = launcher.steps[0][2], launcher.steps[0][3]
        out = cl.Buffer(ctx, rw, 4)

        def set_args():
            kernel.set_arg(0, d.base_data)
            kernel.set_arg(2, out)

        steps["set_arg x2"] = set_args
        steps["enqueue_nd_range_kernel"] = lambda: cl.enqueue_nd_range_kernel(queue, kernel, gsize, lsize)
        steps["launcher.device_array (whole launcher)"] = lambda: launcher.device_array(d, {})
    steps["clreduce.sum(device array)"] = lambda: clreduce.sum(d)
    steps["pyopencl.array.sum"] = lambda: cla.sum(d)
    res = {}
    for name, fn in steps.items():
        try:
            res[name] = per_call(fn, calls // 4, repeats)
        except Exception as exc:  # noqa: BLE001 - e.g. pyopencl.array.sum without mako
            res[name] = f"failed: {type(exc).__name__}: {str(exc)[:100]}"
        queue.finish()
    res.update(common_steps(d, calls, repeats))
    report["ns"] = res
    report["cprofile clreduce.sum(device array)"] = profile_of(lambda: clreduce.sum(d), calls // 4)
    queue.finish()

    # does a release wait for the device? a buffer used by a long kernel, released at once
    big = cla.to_device(queue, np.ones((big_rows, 16), np.float32))
    clreduce.mean(big, axis=-1)
    clreduce.mean(big, axis=-1)
    queue.finish()
    t0 = time.perf_counter()
    clreduce.mean(big, axis=-1).finish()
    one = time.perf_counter() - t0
    waits = {}
    for label in ("unrelated buffer", "the result buffer"):
        queue.finish()
        scratch = cl.Buffer(ctx, rw, 1 << 20)
        r = clreduce.mean(big, axis=-1)
        t0 = time.perf_counter()
        if label == "unrelated buffer":
            scratch.release()
        else:
            r.base_data.release()
        waits[label] = round((time.perf_counter() - t0) * 1e6, 1)
        queue.finish()
    report["release behind a big kernel (us)"] = waits
    report["one big call, waited (us)"] = round(one * 1e6, 1)
    report.update(_pool_facts(queue, big))
    # back to back: kept results (no release per call) against dropped ones
    for label, keep in (("results dropped", False), ("results kept", True)):
        kept = []
        queue.finish()
        t0 = time.perf_counter()
        host = []
        for _ in range(20):
            c0 = time.perf_counter()
            r = clreduce.mean(big, axis=-1)
            host.append(time.perf_counter() - c0)
            if keep:
                kept.append(r)
        queue.finish()
        report[f"big back to back, {label}: us per call (wall, median host part)"] = (
            round((time.perf_counter() - t0) / 20 * 1e6, 1), round(float(np.median(host)) * 1e6, 1))
        del kept
    # the same launches with output buffers from a pyopencl MemoryPool (a dropped result goes
    # back to the pool instead of clReleaseMemObject): does releasing cost the overlap?
    entry = fastpath.lookup(_key(big, "mean", -1))
    if entry is not None:
        import pyopencl.tools as cl_tools

        launcher = entry.launch.__self__
        pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))

        def pooled():
            out = pool.allocate(launcher.out_nbytes)
            partials = pool.allocate(launcher.partials_bytes) if launcher.partials_bytes else None
            event = launcher._enqueue(queue, launcher.kernels, (big.base_data, out, partials), (0, 0, 0))
            return launcher.make_array(out, ctx, queue, event)

        for label, fn in (("pooled outputs", pooled), ("public call", lambda: clreduce.mean(big, axis=-1))):
            for _ in range(3):
                fn()
            queue.finish()
            host = []
            t0 = time.perf_counter()
            for _ in range(20):
                c0 = time.perf_counter()
                fn()
                host.append(time.perf_counter() - c0)
            queue.finish()
            report[f"big back to back, {label}: us per call (wall, median host part)"] = (
                round((time.perf_counter() - t0) / 20 * 1e6, 1), round(float(np.median(host)) * 1e6, 1))
        events = [launcher._enqueue(queue, launcher.kernels, (big.base_data, pool.allocate(launcher.out_nbytes),
                                                              None), (0, 0, 0)) for _ in range(3)]
        queue.finish()
        report["big kernel alone (us, event; profiling queue only)"] = [
            round((e.profile.end - e.profile.start) / 1e3, 1) for e in events] if (
            queue.properties & cl.command_queue_properties.PROFILING_ENABLE) else "queue not profiling"
    return report


def _pool_facts(queue, big) -> dict:
    """What cl_pool rests on, on this driver: does a pending command count as a reference to
    its buffers; does releasing a used, finished buffer wait behind another kernel;
    back-to-back calls dropping their results with the pool off and on."""
    import pyopencl as cl

    from clreduce.backends import cl_pool

    ctx = queue.context
    rw = cl.mem_flags.READ_WRITE
    facts = {"cl_pool mode": cl_pool.mode_for(ctx, queue),
             "driver counts pending commands (cl_pool.counts_pending)": cl_pool.counts_pending(ctx, queue)}
    gate = cl.UserEvent(ctx)
    src, dst = cl.Buffer(ctx, rw, 64), cl.Buffer(ctx, rw, 64)
    copy = cl.enqueue_copy(queue, dst, src, byte_count=64, wait_for=[gate])
    refs = {"copy source, pending": src.reference_count}
    gate.set_status(cl.command_execution_status.COMPLETE)
    copy.wait()
    refs["copy source, done"] = src.reference_count
    queue.finish()
    r = clreduce.mean(big, axis=-1)
    refs["kernel output, pending"] = r.base_data.reference_count
    refs["kernel input, pending"] = big.base_data.reference_count
    queue.finish()
    refs["kernel output, done"] = r.base_data.reference_count
    facts["driver reference counts"] = refs
    done = clreduce.mean(big, axis=-1)
    queue.finish()
    pending = clreduce.mean(big, axis=-1)
    t0 = time.perf_counter()
    done.base_data.release()
    facts["release of a used, finished buffer behind another big kernel (us)"] = round(
        (time.perf_counter() - t0) * 1e6, 1)
    del pending, done, r
    queue.finish()
    per_mode = {}
    for mode in ("off", "reuse"):
        cl_pool.mode_override = mode
        try:
            for _ in range(3):
                clreduce.mean(big, axis=-1)
            queue.finish()
            host = []
            t0 = time.perf_counter()
            for _ in range(30):
                c0 = time.perf_counter()
                clreduce.mean(big, axis=-1)
                host.append(time.perf_counter() - c0)
            queue.finish()
            per_mode[mode] = (round((time.perf_counter() - t0) / 30 * 1e6, 1), round(float(np.median(host)) * 1e6, 1))
        finally:
            cl_pool.mode_override = None
    facts["big back to back, results dropped, per cl_pool mode: us per call (wall, median host part)"] = per_mode
    facts["cl_pool stats"] = cl_pool.stats()
    return facts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--opencl", default=None, metavar="SELECTOR")
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--big-mb", type=int, default=1024, help="OpenCL: the big array (rows x 16 float32)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    report = {}
    if args.cuda:
        try:
            report["cuda"] = cuda_profile(args.calls, args.repeats)
        except Exception as exc:  # noqa: BLE001 - keep what the other section finds
            report["cuda"] = {"failed": repr(exc)[:300]}
    if args.opencl:
        try:
            report["opencl"] = opencl_profile(args.opencl, args.calls, args.repeats, (args.big_mb << 20) // 64)
        except Exception as exc:  # noqa: BLE001
            report["opencl"] = {"failed": repr(exc)[:300]}
    for section in report.values():
        for name, value in section.items():
            if isinstance(value, str):
                print(f"== {name}\n{value}")
            else:
                print(f"== {name}: {json.dumps(value, indent=1)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
